package main

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/agent"
	"github.com/signoff/signoff/bot/permissions"
)

func init() { commands["exec"] = execCommand }

// execCommand asks the gateway's /v1/check about argv and runs it only
// when the gateway allows it (safe, caution, a rule or a grant) or people
// approve it.
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
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	argv := fs.Args()
	ch := permissions.Check{Persona: *persona, Action: shellJoin(argv), Reason: *reason, Kind: bot.KindCommand, Timeout: bot.Duration(*timeout), Wait: true, Nonce: bot.NewNonce()}
	if ch.Persona == "" {
		ch.Persona = cfg.Persona
	}
	if wd, err := os.Getwd(); err == nil {
		ch.Cwd = wd
	}
	// The gateway decides: its rules, grants, mode and classifier. Nothing
	// runs that it did not allow; unreachable, nothing runs.
	client := requester(cfg, a.stderr)
	res, err := client.Check(ctx, ch)
	if err != nil {
		fmt.Fprintf(a.stderr, "signoff: %s; nothing was run\n", bot.ErrorMessage(err))
		return 2
	}
	verify := cfg.verifier(a.stderr)
	asked, _ := permissions.Asked(ch)
	switch {
	case res.Decision == permissions.Allow && res.Request == nil:
		// Believed only with the pinned gateway's signed receipt.
		if ok, why := agent.CheckAllowed(verify, ch, res); !ok {
			fmt.Fprintf(a.stderr, "signoff: %s; not run\n", why)
			return 1
		}
		if res.By != permissions.BySafe {
			fmt.Fprintf(a.stderr, "signoff: %s; running without asking (audited)\n", res.Why)
		}
	case res.Decision == permissions.Allow || res.Decision == permissions.Ask:
		if res.Request == nil {
			return a.failf("%s, and no request was made; nothing was run", res.Why)
		}
		if code, _ := awaitRequest(ctx, a, client, res.Request, verify, cfg.pinCheck(), asked); code != 0 {
			return code
		}
	default:
		if r := res.Request; r != nil {
			fmt.Fprintln(a.stderr, bot.Outcome(r))
		}
		fmt.Fprintf(a.stderr, "signoff: %s; not run\n", res.Why)
		return 1
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
