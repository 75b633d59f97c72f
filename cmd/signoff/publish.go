package main

import (
	"context"
	"fmt"
	"strings"
)

func init() { commands["publish"] = publish }

// publish posts a plain message on a persona's channels (POST /v1/publish;
// the token needs the publish scope).
func publish(ctx context.Context, a *app, args []string) int {
	fs := a.flags("publish", "publish [--persona P] TEXT")
	persona := fs.String("persona", "", "persona whose channels carry it (default $SIGNOFF_PERSONA or demo)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return a.failf("publish takes the text to post")
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	if *persona == "" {
		*persona = cfg.Persona
	}
	res, err := cfg.client(a.stderr).Publish(ctx, *persona, strings.Join(fs.Args(), " "))
	if err != nil {
		return a.fail(err)
	}
	for _, p := range res.Posted {
		fmt.Fprintf(a.stdout, "posted on %s %s %s\n", p.Platform, p.Channel, p.ID)
	}
	for _, f := range res.Failed {
		fmt.Fprintf(a.stderr, "signoff: not posted on %s %s: %s\n", f.Platform, f.Channel, f.Error)
	}
	if len(res.Posted) == 0 {
		if len(res.Failed) == 0 {
			// The terminal channel (what init writes) keeps requests, not messages.
			fmt.Fprintf(a.stderr, "signoff: posted nowhere: persona %s has no channel that carries messages (the terminal shows requests only); "+
				"add a Nostr, Slack or Discord channel to its file (e.g. signoff init --relay wss://… for a new one) and restart serve\n", *persona)
		} else {
			fmt.Fprintf(a.stderr, "signoff: posted nowhere: no channel of persona %s took it\n", *persona)
		}
		return 1
	}
	return 0
}
