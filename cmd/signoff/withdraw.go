package main

import (
	"context"
	"fmt"
	"io"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
)

func init() { commands["withdraw"] = withdraw }

// requester is the client of a command that asks and waits (request,
// exec, the hook, the MCP server): should it go away mid-wait — even by
// SIGKILL, which it cannot catch — the gateway withdraws its request once
// its long-poll has been gone for the grace period. Ctrl-C and SIGTERM
// withdraw at once (agent.Await).
func requester(cfg *config, stderr io.Writer) *httpapi.Client {
	c := cfg.client(stderr)
	c.WithdrawOnDisconnect = true
	return c
}

// withdraw takes back a pending request from a terminal.
func withdraw(ctx context.Context, a *app, args []string) int {
	fs := a.flags("withdraw", "withdraw [--reason R] ID")
	reason := fs.String("reason", "", "why it is taken back (shown on the cards)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return a.failf("withdraw takes one request id (see `signoff pending`)")
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	r, err := cfg.client(a.stderr).Withdraw(ctx, fs.Arg(0), *reason)
	if err != nil {
		if bot.ErrorCode(err) == bot.EConflict {
			fmt.Fprintf(a.stderr, "signoff: %s\n", bot.ErrorMessage(err))
			return 1
		}
		return a.fail(err)
	}
	fmt.Fprintf(a.stdout, "request %s: %s\n", r.ID, bot.Outcome(r))
	return 0
}
