package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/agent"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/wait"
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
	code, _ := ask(ctx, a, requester(cfg, a.stderr), n, cfg.verifier(a.stderr), cfg.pinCheck())
	return code
}

// ask submits n, shows the ⛔ line, waits showing progress, and returns
// the exit code: 0 approved, 1 denied or expired, 2 error. Any error while
// waiting is a deny: silence is never consent.
func ask(ctx context.Context, a *app, c *httpapi.Client, n bot.NewRequest, verify agent.Verifier, pin agent.PinCheck) (int, *bot.Request) {
	n.Nonce = bot.NewNonce()
	r, err := agent.Submit(ctx, c, n)
	if err != nil {
		if ctx.Err() != nil {
			if r != nil {
				fmt.Fprintf(a.stderr, "signoff: interrupted; request %s %s, not approved\n", r.ID, r.Status)
			} else {
				fmt.Fprintln(a.stderr, "signoff: interrupted; not approved")
			}
			return 1, r
		}
		return a.fail(err), nil
	}
	return awaitRequest(ctx, a, c, r, verify, pin, n)
}

// awaitRequest shows a pending request and waits for its decision: exit
// 0 approved, 1 denied, expired or interrupted, 2 the gateway lost.
func awaitRequest(ctx context.Context, a *app, c *httpapi.Client, r *bot.Request, verify agent.Verifier, pin agent.PinCheck, n bot.NewRequest) (int, *bot.Request) {
	if err := agent.CheckPin(pin, c, r); err != nil {
		fmt.Fprintf(a.stderr, "signoff: %v; not approved\n", err)
		return 2, r
	}
	fmt.Fprintln(a.stderr, bot.Headline(r))
	fmt.Fprintf(a.stderr, "  risk: %s", r.Level)
	if len(r.Reasons) > 0 {
		fmt.Fprintf(a.stderr, " (%s)", bot.Escape(strings.Join(r.Reasons, "; ")))
	}
	fmt.Fprintf(a.stderr, "\n  request %s · persona %s · %s\n", r.ID, r.Persona, bot.HowToAnswer)
	fmt.Fprintf(a.stderr, "  from a terminal: signoff approve %s   (or deny)\n", r.ID)

	d := wait.New(a.stderr, wait.IsTerminal(a.stderr))
	d.Update(r)
	d.Start()
	r, err := agent.Await(ctx, c, r, 0, d.Update)
	d.Stop()
	if err != nil {
		if ctx.Err() != nil {
			if wait.IsTerminal(a.stderr) {
				fmt.Fprintln(a.stderr) // after the ^C the terminal echoed
			}
			if r.Status == bot.Withdrawn {
				fmt.Fprintf(a.stderr, "signoff: interrupted while waiting; request %s withdrawn, not approved\n", r.ID)
			} else {
				fmt.Fprintln(a.stderr, "signoff: interrupted while waiting; not approved")
			}
			return 1, r
		}
		fmt.Fprintf(a.stderr, "signoff: %s; not approved\n", bot.ErrorMessage(err))
		return 2, r
	}
	fmt.Fprintln(a.stderr, bot.Outcome(r))
	if ok, why := agent.Approved(verify, n, r); ok {
		return 0, r
	} else if why != "" {
		fmt.Fprintf(a.stderr, "signoff: %s; not approved\n", why)
	}
	return 1, r
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
