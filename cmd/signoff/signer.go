package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// signerFlags are how a person signs an answer: --key FILE, or --bunker
// URL (else $SIGNOFF_BUNKER unless --key is given) on a remote signer.
// approve, deny, net approve and net deny share them.
type signerFlags struct {
	key, bunker *string
	wait        *time.Duration
}

func addSignerFlags(fs *flag.FlagSet) signerFlags {
	return signerFlags{
		key:    fs.String("key", "", "your key file (default $SIGNOFF_KEY or the one keygen wrote)"),
		bunker: fs.String("bunker", "", "sign on your phone or another NIP-46 remote signer: its bunker://… URL (default $SIGNOFF_BUNKER); no key file is read"),
		wait:   fs.Duration("bunker-timeout", defaultBunkerWait, "how long to wait for your signer to confirm"),
	}
}

// personSigner signs as the person: with their key, or on their signer.
type personSigner struct {
	key    *signing.Key
	bunker *signing.BunkerURL
	wait   time.Duration
}

// open checks the flags and loads the key; nothing is contacted yet. On
// error it has printed why and returns the exit code.
func (f signerFlags) open(a *app, cfg *config, name string) (*personSigner, int) {
	bunkerURL := *f.bunker
	if bunkerURL != "" && *f.key != "" {
		return nil, a.failf("%s signs with --key or --bunker, not both", name)
	}
	if bunkerURL == "" && *f.key == "" {
		var err error
		if bunkerURL, err = bunkerFromEnv(); err != nil {
			return nil, a.fail(err)
		}
	}
	if bunkerURL != "" {
		b, err := signing.ParseBunkerURL(bunkerURL)
		if err != nil {
			return nil, a.failf("%v; nothing signed", err)
		}
		if *f.wait <= 0 || *f.wait > maxBunkerWait {
			return nil, a.failf("--bunker-timeout must be more than 0 and at most %s (the gateway refuses older reactions)", maxBunkerWait)
		}
		return &personSigner{bunker: b, wait: *f.wait}, 0
	}
	path := *f.key
	if path == "" {
		path = cfg.keyPath()
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, a.failf("cannot read your key at %s: %v (run `signoff keygen` first, set SIGNOFF_KEY, or sign on your phone with --bunker)", path, err)
	}
	key, err := signing.ParseKey(string(raw))
	if err != nil {
		return nil, a.failf("key file %s: %v", path, err)
	}
	warnKeyMode(a, path)
	return &personSigner{key: key}, 0
}

// react signs the person's reaction c to the request's signed event
// (already verified against the pinned gateway key). show is told the
// signer's npub before anything is signed, to show what is answered.
func (s *personSigner) react(ctx context.Context, a *app, signed *nostr.Event, c bot.Choice, reason string, show func(npub string)) (json.RawMessage, error) {
	if s.bunker != nil {
		ev, err := bunkerReaction(ctx, a, s.bunker, s.wait, signed, c, reason, show)
		if err != nil {
			return nil, fmt.Errorf("%w; nothing sent", err)
		}
		return ev, nil
	}
	ev, err := signing.NewReactionWithReason(s.key, signed.ID, signed.PubKey, c, reason, time.Now())
	if err != nil {
		return nil, err
	}
	show(s.key.Npub())
	return ev, nil
}

// warnKeyMode says so when a person's key file can be read by others:
// whoever reads it can approve as them.
func warnKeyMode(a *app, path string) {
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(a.stderr, "signoff: ⚠ your key file %s can be read by others (mode %04o), and whoever reads it can approve as you: chmod 600 %s\n", path, st.Mode().Perm(), path)
	}
}
