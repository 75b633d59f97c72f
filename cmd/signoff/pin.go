package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"

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
		fmt.Fprintf(w, "signoff: %v; anything that needs approval will be denied\n", err)
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
