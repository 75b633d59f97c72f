package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
)

func init() { commands["request"] = request }

func request(ctx context.Context, a *app, args []string) int {
	fs := a.flags("request", "request [--persona P] [--reason R] [--timeout D] [--kind K] -- CMD… | --action TEXT")
	persona := fs.String("persona", "", "persona whose owners decide (default $SIGNOFF_PERSONA or demo)")
	reason := fs.String("reason", "", "why the agent wants to do it")
	timeout := fs.Duration("timeout", 0, "give up sooner than the persona's timeout")
	action := fs.String("action", "", "free-text action instead of a command")
	kind := fs.String("kind", "", "command, tool, network or text (default: command, or text with --action)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	n := bot.NewRequest{Persona: *persona, Reason: *reason, Kind: bot.Kind(*kind), Timeout: bot.Duration(*timeout)}
	switch {
	case *action != "" && fs.NArg() > 0:
		return a.failf("give either --action TEXT or -- CMD…, not both")
	case *action != "":
		n.Action = *action
		if n.Kind == "" {
			n.Kind = bot.KindText
		}
	case fs.NArg() > 0:
		n.Action = shellJoin(fs.Args())
	default:
		fs.Usage()
		return a.failf("nothing to ask about: give -- CMD… or --action TEXT")
	}
	if n.Persona == "" {
		n.Persona = cfg.Persona
	}
	code, _ := ask(ctx, a, httpapi.NewClient(cfg.URL), n)
	return code
}

// ask submits n, shows the ⛔ line, waits showing progress, and returns
// the exit code: 0 approved, 1 denied or expired, 2 error. Any error while
// waiting is a deny: silence is never consent.
func ask(ctx context.Context, a *app, c *httpapi.Client, n bot.NewRequest) (int, *bot.Request) {
	r, err := c.Submit(ctx, n)
	if err != nil {
		return a.fail(err), nil
	}
	fmt.Fprintln(a.stderr, bot.Headline(r))
	fmt.Fprintf(a.stderr, "  risk: %s", r.Level)
	if len(r.Reasons) > 0 {
		fmt.Fprintf(a.stderr, " (%s)", strings.Join(r.Reasons, "; "))
	}
	fmt.Fprintf(a.stderr, "\n  request %s · persona %s · %s\n", r.ID, r.Persona, bot.HowToAnswer)
	fmt.Fprintf(a.stderr, "  from a terminal: signoff approve %s   (or deny)\n", r.ID)

	p := progress{w: a.stderr, tty: isTTY(a.stderr)}
	for !r.Status.Final() {
		p.show(r, time.Now())
		wait := min(time.Until(r.Deadline)+2*time.Second, 25*time.Second)
		if wait < time.Second {
			wait = time.Second
		}
		next, err := c.Wait(ctx, r.ID, wait)
		if err != nil {
			p.done()
			if ctx.Err() != nil {
				fmt.Fprintln(a.stderr, "signoff: interrupted while waiting; not approved")
				return 1, r
			}
			fmt.Fprintf(a.stderr, "signoff: %s; not approved\n", bot.ErrorMessage(err))
			return 2, r
		}
		r = next
	}
	p.done()
	fmt.Fprintln(a.stderr, bot.Outcome(r))
	if r.Status == bot.Approved {
		return 0, r
	}
	return 1, r
}

// progress shows votes so far and the time left: rewritten in place on a
// terminal, a line on change (or every 30s) otherwise.
type progress struct {
	w    io.Writer
	tty  bool
	last string
	at   time.Time
}

func (p *progress) show(r *bot.Request, now time.Time) {
	counted, ignored := 0, 0
	var who []string
	for _, v := range r.Votes {
		switch v.Result {
		case bot.Counted:
			counted++
			name := v.Name
			if name == "" {
				name = v.Voter.String()
			}
			who = append(who, name+" "+string(v.Choice))
		case bot.Ignored:
			ignored++
		}
	}
	left := r.Deadline.Sub(now).Round(time.Second)
	if left < 0 {
		left = 0
	}
	votes := fmt.Sprintf("%d votes", counted)
	if len(who) > 0 {
		votes += " (" + strings.Join(who, ", ") + ")"
	}
	if ignored > 0 {
		votes += fmt.Sprintf(", %d ignored", ignored)
	}
	line := fmt.Sprintf("waiting: %s · %s left", votes, left)
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.last = line
		return
	}
	key := votes
	if key != p.last || now.Sub(p.at) >= 30*time.Second {
		fmt.Fprintln(p.w, line)
		p.last, p.at = key, now
	}
}

func (p *progress) done() {
	if p.tty && p.last != "" {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func isTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// shellJoin turns argv back into one command line, quoting where needed,
// so the classifier and the people see what would run.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, s := range args {
		out[i] = shellQuote(s)
	}
	return strings.Join(out, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./=:,+@%^", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
