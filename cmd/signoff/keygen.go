package main

import (
	"context"
	"fmt"
	"os"
	"os/user"

	"github.com/signoff/signoff/signing"
)

func init() { commands["keygen"] = keygen }

func keygen(ctx context.Context, a *app, args []string) int {
	fs := a.flags("keygen", "keygen [--out FILE] | keygen --show [--out FILE]")
	out := fs.String("out", "", "where to write the key (default $SIGNOFF_KEY or the user config dir)")
	showNpub := fs.Bool("show", false, "print the npub of the key you already have, and where it is")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *showNpub {
		return showKey(a, *out)
	}
	path := *out
	if path == "" {
		cfg, err := loadConfig()
		if err != nil {
			return a.fail(err)
		}
		path = cfg.keyPath()
	}
	k := signing.NewKey()
	if err := signing.WriteKey(path, k); err != nil {
		return a.failf("%v (a key is never overwritten; choose another path with --out)", err)
	}
	fmt.Fprintf(a.stderr, "wrote your secret key to %s (mode 0600; keep it secret)\n", path)
	fmt.Fprintf(a.stderr, "warning: %s\n", custodyWarning())
	fmt.Fprintf(a.stderr, "put this in a persona file to make yourself an owner or member:\n\n  owner:\n    name: you\n    nostr: %s\n\n", k.Npub())
	fmt.Fprintln(a.stdout, k.Npub())
	return 0
}

// showKey prints the npub of an existing key: what a persona file needs.
func showKey(a *app, path string) int {
	if path == "" {
		cfg, err := loadConfig()
		if err != nil {
			return a.fail(err)
		}
		path = cfg.keyPath()
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return a.failf("no key at %s (%v): run `signoff init` or `signoff keygen`", path, err)
	}
	k, err := signing.ParseKey(string(raw))
	if err != nil {
		return a.failf("key file %s: %v", path, err)
	}
	fmt.Fprintf(a.stderr, "your key is %s\n", path)
	fmt.Fprintln(a.stdout, k.Npub())
	return 0
}

// custodyWarning says who can read the key: every process of this OS user,
// an AI agent running as it included, could sign as the person.
func custodyWarning() string {
	name := "this user"
	if u, err := user.Current(); err == nil {
		name = "user " + u.Username
	}
	return "every process running as " + name + " can read this key — an AI agent running as " + name +
		" could approve its own requests with it. Run agents as another user, or keep this key on another machine " +
		"(see docs/trust-boundary.md)"
}
