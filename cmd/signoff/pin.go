package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/agent"
	"github.com/signoff/signoff/signing"
)

// defaultPinPath is the pin file a person writes: the gateway's npub.
func defaultPinPath() string {
	d, err := os.UserConfigDir()
	if err != nil {
		d = userDataDir()
	}
	return filepath.Join(d, "signoff", signing.PinFileName)
}

// pin is the gateway key the client trusts: SIGNOFF_GATEWAY_KEY, the pin
// file a person wrote (SIGNOFF_GATEWAY_PIN, default
// ~/.config/signoff/gateway.pub) and, when SIGNOFF_URL is on this machine,
// the key the local gateway keeps in its data dir. All that are present
// must agree.
func (c *config) pin() (signing.Pin, error) {
	srcs := []signing.PinSource{{Name: "SIGNOFF_GATEWAY_KEY", Value: c.GatewayKey}}
	file := c.GatewayPin
	if file == "" {
		file = defaultPinPath()
	}
	s, err := signing.ReadPinSource(file, false)
	if err != nil {
		return signing.Pin{}, err
	}
	srcs = append(srcs, s)
	if loopbackURL(c.URL) {
		s, err := signing.ReadPinSource(filepath.Join(c.DataDir, signing.PinFileName), false)
		if err != nil {
			return signing.Pin{}, err
		}
		if s.Value == "" { // a data dir from before gateway.pub: its key
			if s, err = signing.ReadPinSource(filepath.Join(c.DataDir, "gateway.key"), true); err != nil {
				return signing.Pin{}, err
			}
		}
		srcs = append(srcs, s)
	}
	return signing.ResolvePin(srcs...)
}

// verifier is the receipt check every client runs before it acts on an
// approval. Unpinned (or pins that disagree), it says so on w and returns
// nil: nothing that needs approval is allowed.
func (c *config) verifier(w io.Writer) agent.Verifier {
	p, err := c.pin()
	if err != nil {
		fix := ""
		if errors.Is(err, signing.ErrUnpinned) {
			fix = "\n  for a gateway on another machine or in a container, pin its key: export SIGNOFF_GATEWAY_KEY=npub1… " +
				"(or write it to " + defaultPinPath() + "); the gateway logs it at start (\"gateway key … npub=…\")"
		}
		fmt.Fprintf(w, "signoff: %v; anything that needs approval will be denied%s\n", err, fix)
		return nil
	}
	return func(asked bot.NewRequest, r *bot.Request) error { return signing.CheckApproval(p.Key, asked, r) }
}

func loopbackURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// writeLocalPin leaves the gateway's npub in its data dir, where clients on
// this machine pin it (SIGNOFF_URL on loopback).
func writeLocalPin(cfg *config, k *signing.Key, log interface{ Info(string, ...any) }) error {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	path := filepath.Join(cfg.DataDir, signing.PinFileName)
	if err := signing.WritePinFile(path, k); err != nil {
		return err
	}
	log.Info("gateway key pinned for local clients", "path", path,
		"remote clients", "SIGNOFF_GATEWAY_KEY="+k.Npub()+" or that npub in "+defaultPinPath())
	return nil
}

// warnOpenRedis says so when the store is reached over the network with no
// password: anyone who can reach it could write a request's fields (the
// gateway then reads them as undecided, but can be made to lose requests).
func warnOpenRedis(raw string, log interface{ Warn(string, ...any) }) {
	u, err := url.Parse(raw)
	if err != nil {
		return
	}
	if _, has := u.User.Password(); has {
		return
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) || host == "" {
		return
	}
	log.Warn("Redis is reached over the network without a password: require auth (requirepass or an ACL user) " +
		"and keep it out of the agent's reach; see docs/trust-boundary.md")
}

// pinCheck is the check every client runs the moment the gateway answers
// with a request: its signed event must be the pinned key's, else the
// request is withdrawn and the person told how to pin the right key.
// Unpinned it is nil (verifier has said so). A request with no event is
// left to the receipt check.
func (c *config) pinCheck() agent.PinCheck {
	p, err := c.pin()
	if err != nil {
		return nil
	}
	return func(r *bot.Request) error {
		if len(r.Event) == 0 {
			return nil
		}
		ev, err := signing.VerifyEvent(r.Event)
		if err != nil {
			return fmt.Errorf("request %s's signed event does not verify (%s)", r.ID, bot.ErrorMessage(err))
		}
		if ev.PubKey == p.Key {
			return nil
		}
		theirs, mine := npubOf(ev.PubKey), npubOf(p.Key)
		return fmt.Errorf("the gateway at %s signs with %s, not the pinned gateway key %s (from %s), so nothing it approves would be believed: request %s was withdrawn before anyone approved it.\n"+
			"  If that gateway is yours (its start-up log says \"gateway key … npub=%s\"), pin it: put %s in place of the old key in %s "+
			"(SIGNOFF_GATEWAY_KEY=%s, or the file %s); in a container, give the gateway a fixed key (SIGNOFF_NOSTR_KEY) so the pin survives a restart",
			c.URL, theirs, mine, strings.Join(p.From, ", "), r.ID, theirs, theirs, strings.Join(p.From, ", "), theirs, defaultPinPath())
	}
}

func npubOf(hex string) string {
	if s, err := nip19.EncodePublicKey(hex); err == nil {
		return s
	}
	return hex
}
