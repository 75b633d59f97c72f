package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/agent"
)

func init() { commands["exec"] = execCommand }

// execCommand classifies argv, runs safe and caution commands at once,
// asks the gateway about anything else and runs it only when approved.
// The exit code is the command's; 1 when it was not approved; 2 on a
// usage or server error (and then nothing runs).
func execCommand(ctx context.Context, a *app, args []string) int {
	fs := a.flags("exec", "exec [--persona P] [--reason R] [--timeout D] -- CMD…")
	persona := fs.String("persona", "", "persona whose owners decide (default $SIGNOFF_PERSONA or demo)")
	reason := fs.String("reason", "", "why the agent wants to run it")
	timeout := fs.Duration("timeout", 0, "give up sooner than the persona's timeout")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return a.failf("nothing to run: give -- CMD…")
	}
	cfg, c, err := configAndClassifier()
	if err != nil {
		return a.fail(err)
	}
	argv := fs.Args()
	line := shellJoin(argv)
	risk := c.Command(line)
	n := bot.NewRequest{Persona: *persona, Action: line, Reason: *reason, Kind: bot.KindCommand, Timeout: bot.Duration(*timeout)}
	if n.Persona == "" {
		n.Persona = cfg.Persona
	}
	client := requester(cfg)
	if risk.Level == bot.Caution {
		// Runs at once, logged to the gateway's audit when it is reachable;
		// a gateway whose rules call it dangerous makes it ask after all.
		logged, insist := agent.LogCaution(ctx, client, n)
		switch {
		case insist != nil:
			risk = *insist
		case logged:
			fmt.Fprintf(a.stderr, "signoff: caution: %s; running without asking (logged)\n", strings.Join(risk.Reasons, "; "))
		default:
			fmt.Fprintf(a.stderr, "signoff: caution: %s; running without asking (gateway not reachable: not logged)\n", strings.Join(risk.Reasons, "; "))
		}
	}
	if agent.MustAsk(risk.Level) {
		if code, _ := ask(ctx, a, client, n, cfg.verifier(a.stderr)); code != 0 {
			return code
		}
	}
	code, err := agent.Run(argv, a.stdin, a.stdout, a.stderr, forwardedSignals(a.stdin)...)
	if err != nil {
		fmt.Fprintf(a.stderr, "signoff: %v\n", err)
	}
	return code
}

// forwardedSignals are passed on to the command. Interrupt and quit from
// a terminal already reach it (it is in the terminal's foreground
// process group), so they are forwarded only when stdin is not one.
func forwardedSignals(stdin any) []os.Signal {
	sigs := []os.Signal{syscall.SIGTERM, syscall.SIGHUP}
	if f, ok := stdin.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return sigs
		}
	}
	return append(sigs, os.Interrupt, syscall.SIGQUIT)
}
