package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/notify"
)

func init() { commands["pending"] = pending }

func pending(ctx context.Context, a *app, args []string) int {
	fs := a.flags("pending", "pending [--json] [--watch [--every 2s] [--no-desktop]]")
	asJSON := fs.Bool("json", false, "the requests as the API returns them (with --watch: one event a line)")
	watch := fs.Bool("watch", false, "keep watching: ring the bell and notify the desktop for each new request")
	every := fs.Duration("every", 2*time.Second, "with --watch: how often to look")
	noDesktop := fs.Bool("no-desktop", false, "with --watch: no desktop notifications")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.failf("pending takes no arguments")
	}
	if *every < 200*time.Millisecond {
		return a.failf("--every %s is too often (at least 200ms)", *every)
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	c := cfg.client(a.stderr)
	list := func(ctx context.Context) ([]bot.Request, error) {
		rs, err := c.List(ctx, bot.Filter{Status: bot.Pending})
		out := make([]bot.Request, 0, len(rs))
		for _, r := range rs {
			out = append(out, *r)
		}
		return out, err
	}
	if *watch {
		w := &pendingWatch{a: a, list: list, get: c.Get, json: *asJSON, every: *every, tty: stdoutIsTerminal(a)}
		if !*noDesktop {
			w.desktop, err = notify.OpenDesktop()
			if err != nil {
				fmt.Fprintf(a.stderr, "signoff: no desktop notifications: %v; the bell and this list only\n", err)
			} else {
				defer w.desktop.Close()
				fmt.Fprintln(a.stderr, "signoff: desktop notifications on (freedesktop D-Bus)")
			}
		}
		return w.run(ctx)
	}
	rs, err := list(ctx)
	if err != nil {
		return a.fail(err)
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rs); err != nil {
			return a.fail(err)
		}
		return 0
	}
	if len(rs) == 0 {
		fmt.Fprintln(a.stderr, "nothing is waiting for an answer")
		return 0
	}
	pendingTable(a.stdout, rs, time.Now())
	return 0
}

func pendingTable(w io.Writer, rs []bot.Request, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPERSONA\tAGE\tLEFT\tVOTES\tRISK\tACTION — REASON")
	for _, r := range rs {
		counted := 0
		for _, v := range r.Votes {
			if v.Result == bot.Counted {
				counted++
			}
		}
		what := oneLine(bot.Escape(r.Action), 60)
		if r.Reason != "" {
			what += " — " + oneLine(bot.Escape(r.Reason), 40)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, bot.Escape(r.Persona),
			now.Sub(r.CreatedAt).Round(time.Second), max(r.Deadline.Sub(now), 0).Round(time.Second), counted, r.Level, what)
	}
	tw.Flush()
}

// pendingWatch is `signoff pending --watch`: it looks every few seconds
// and says what is new (bell, desktop notification) and what has gone.
type pendingWatch struct {
	a       *app
	list    func(context.Context) ([]bot.Request, error)
	get     func(context.Context, string) (*bot.Request, error)
	json    bool
	tty     bool
	every   time.Duration
	desktop *notify.Desktop

	seen   notify.Watch
	events []string // the last few, under the list on a terminal
	down   bool
}

// watchEvent is one line of `pending --watch --json`.
type watchEvent struct {
	Event   string       `json:"event"` // new or gone
	ID      string       `json:"id"`
	Status  bot.Status   `json:"status,omitempty"`
	Request *bot.Request `json:"request,omitempty"`
	Approve string       `json:"approve,omitempty"`
	Show    string       `json:"show,omitempty"`
}

func (w *pendingWatch) run(ctx context.Context) int {
	if !w.json && !w.tty {
		fmt.Fprintln(w.a.stderr, "signoff: watching for requests (Ctrl-C to stop)")
	}
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		w.look(ctx)
		select {
		case <-ctx.Done():
			fmt.Fprintln(w.a.stderr)
			return 0
		case <-t.C:
		}
	}
}

func (w *pendingWatch) look(ctx context.Context) {
	rs, err := w.list(ctx)
	if err != nil {
		if ctx.Err() == nil && !w.down {
			w.down = true
			fmt.Fprintf(w.a.stderr, "signoff: cannot list requests (%v); still trying every %s\n", errText(err), w.every)
		}
		return
	}
	if w.down {
		w.down = false
		fmt.Fprintln(w.a.stderr, "signoff: the gateway answers again")
	}
	added, gone := w.seen.Look(rs)
	var lines []string
	enc := json.NewEncoder(w.a.stdout)
	for _, r := range added {
		m := notify.NewMessage(&r)
		if w.json {
			enc.Encode(watchEvent{Event: "new", ID: r.ID, Status: r.Status, Request: &r, Approve: m.Approve, Show: m.Show})
		}
		what := oneLine(bot.Escape(r.Action), 80)
		lines = append(lines, fmt.Sprintf("%s new: %s (%s, %s) %s — %s · %s", time.Now().Format("15:04:05"), r.ID, bot.Escape(r.Persona), r.Level, what, m.Approve, m.Show))
		if w.desktop != nil {
			body := what
			if r.Reason != "" {
				body += "\n" + oneLine(bot.Escape(r.Reason), 120)
			}
			body += "\n" + m.Approve
			if _, err := w.desktop.Notify(fmt.Sprintf("signoff: %s asks (%s)", bot.Escape(r.Persona), r.Level), body); err != nil {
				fmt.Fprintf(w.a.stderr, "signoff: %v\n", err)
			}
		}
	}
	for _, id := range gone {
		status, outcome := bot.Status(""), "no longer pending"
		if r, err := w.get(ctx, id); err == nil {
			status, outcome = r.Status, bot.Outcome(r)
		}
		if w.json {
			enc.Encode(watchEvent{Event: "gone", ID: id, Status: status})
		}
		lines = append(lines, fmt.Sprintf("%s %s: %s", time.Now().Format("15:04:05"), id, outcome))
	}
	first := w.events == nil
	if w.events == nil {
		w.events = []string{}
	}
	if w.json || (len(lines) == 0 && !first) {
		return
	}
	if len(added) > 0 {
		fmt.Fprint(w.a.stdout, "\a")
	}
	if !w.tty {
		if first {
			w.table(rs)
		}
		for _, l := range lines {
			if !first || !strings.Contains(l, " new: ") {
				fmt.Fprintln(w.a.stdout, l)
			}
		}
		return
	}
	w.events = append(w.events, lines...)
	if n := len(w.events); n > 8 {
		w.events = w.events[n-8:]
	}
	fmt.Fprint(w.a.stdout, "\x1b[H\x1b[2J")
	fmt.Fprintf(w.a.stdout, "signoff pending --watch · %s · Ctrl-C to stop\n\n", time.Now().Format("15:04:05"))
	w.table(rs)
	if len(w.events) > 0 {
		fmt.Fprintln(w.a.stdout, "\n"+strings.Join(w.events, "\n"))
	}
}

func (w *pendingWatch) table(rs []bot.Request) {
	if len(rs) == 0 {
		fmt.Fprintln(w.a.stdout, "nothing is waiting for an answer")
		return
	}
	pendingTable(w.a.stdout, rs, time.Now())
}

func stdoutIsTerminal(a *app) bool {
	f, ok := a.stdout.(*os.File)
	return ok && isTerminal(f)
}

// errText is err as a person reads it.
func errText(err error) string {
	if e, ok := err.(*bot.Error); ok {
		return e.Message
	}
	return err.Error()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
