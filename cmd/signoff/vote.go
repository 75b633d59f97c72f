package main

import (
	"context"
	"fmt"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

func init() {
	commands["approve"] = func(ctx context.Context, a *app, args []string) int { return vote(ctx, a, args, bot.Approve) }
	commands["deny"] = func(ctx context.Context, a *app, args []string) int { return vote(ctx, a, args, bot.Deny) }
}

// vote signs a NIP-25 reaction with the person's own key — a key file, or
// their remote signer (NIP-46 bunker) — and submits it: the gateway treats
// it like any other Nostr reaction.
func vote(ctx context.Context, a *app, args []string, c bot.Choice) int {
	name := map[bot.Choice]string{bot.Approve: "approve", bot.Deny: "deny"}[c]
	synopsis := name + " [--reason R] [--key FILE | --bunker bunker://…] [--relay URL]… ID"
	if c == bot.Approve {
		synopsis = name + " [--always] [--reason R] [--key FILE | --bunker bunker://…] [--relay URL]… ID"
	}
	fs := a.flags(name, synopsis)
	sf := addSignerFlags(fs)
	reason := fs.String("reason", "", "say why (signed with your vote; the agent is told)")
	var always *bool
	if c == bot.Approve {
		always = fs.Bool("always", false, "approve and don't ask again: a grant for the scope the request shows (♾️), when your answer may grant on its own")
	}
	var relays stringList
	fs.Var(&relays, "relay", "publish the reaction to this relay instead of the gateway (repeatable)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return a.failf("%s takes one request id (see `signoff pending`)", name)
	}
	if always != nil && *always {
		c = bot.Always
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	signer, code := sf.open(a, cfg, name)
	if signer == nil {
		return code
	}

	client := cfg.client(a.stderr)
	r, err := client.Get(ctx, fs.Arg(0))
	if err != nil {
		return a.fail(err)
	}
	if r.Status.Final() {
		fmt.Fprintf(a.stderr, "request %s is already decided: %s\n", r.ID, bot.Outcome(r))
		return 1
	}
	// Sign nothing until the request is the pinned gateway's and the
	// action shown is the one its signed event carries.
	pin, err := cfg.pin()
	if err != nil {
		return a.failf("cannot check request %s: %v; nothing signed", r.ID, err)
	}
	signed, err := signing.VerifyRequestEvent(r, pin.Key)
	if err != nil {
		return a.failf("%v; nothing signed", err)
	}
	show := func(npub string) {
		fmt.Fprintf(a.stderr, "%s as %s:\n%s\n", name, npub, bot.EscapeLines(signed.Content))
		if c == bot.Always {
			if r.GrantScope == nil {
				fmt.Fprintln(a.stderr, "this request has no grant scope (the agent asked in words, or no workspace is known): ♾️ approves it once")
			} else {
				fmt.Fprintf(a.stderr, "♾️ don't ask again for: %s, for %s after approval\n", bot.Escape(r.GrantScope.Text()), r.GrantScope.TTL)
			}
		}
	}
	ev, err := signer.react(ctx, a, signed, c, *reason, show)
	if err != nil {
		return a.failf("%v", err)
	}
	if len(relays) > 0 {
		return publishToRelays(ctx, a, relays, ev)
	}
	out, err := client.PostEvent(ctx, ev)
	if err != nil {
		return a.fail(err)
	}
	switch out.Result {
	case bot.Counted:
		fmt.Fprintf(a.stdout, "counted; request %s is %s\n", r.ID, out.Status)
		if c == bot.Always && out.Status == bot.Approved {
			if got, err := client.Get(ctx, r.ID); err == nil && got.Always && got.GrantScope != nil {
				fmt.Fprintf(a.stdout, "grant %s made: %s (see `signoff grants`)\n", r.ID, got.GrantScope.Text())
			} else {
				fmt.Fprintln(a.stdout, "approved once: no grant (it needs the owner's ♾️, or ♾️ from approvalQuorum members)")
			}
		}
		return 0
	default:
		fmt.Fprintf(a.stdout, "%s: %s; request %s is %s\n", out.Result, out.Reason, r.ID, out.Status)
		return 1
	}
}

type stringList []string

func (s *stringList) String() string     { return fmt.Sprint([]string(*s)) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
