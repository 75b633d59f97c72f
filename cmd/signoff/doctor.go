package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/signoff/signoff/bot/proxy"
	"github.com/signoff/signoff/bot/sandbox"
)

func init() { commands["doctor"] = doctor }

// doctor reports each part signoff run needs — the kernel's, the
// gateway, the egress proxy's policy, the pinned key — with a fix for
// each one missing. Exit 0 when signoff run would start, 1 when not.
func doctor(ctx context.Context, a *app, args []string) int {
	fs := a.flags("doctor", "doctor")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	parts := sandbox.Probe()

	gw := sandbox.Part{Name: "the gateway at " + cfg.URL, Required: true}
	if err := gatewayUp(ctx, cfg.URL); err != nil {
		gw.Detail, gw.Fix = err.Error(), "start it: signoff serve (or set SIGNOFF_URL)"
	} else {
		gw.OK, gw.Detail = true, "answers /healthz"
	}
	parts = append(parts, gw)

	px := sandbox.Part{Name: "the egress proxy's policy", Required: true}
	if gw.OK {
		log, _ := cfg.logger(io.Discard)
		p := &proxy.Proxy{Source: cfg.client(nil), Persona: cfg.Persona, Logger: log}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		go func() { _ = p.Run(pctx) }()
		select {
		case <-p.Loaded():
			rev := p.Revision()
			px.OK, px.Detail = true, fmt.Sprintf("revision %d, %d door(s)", rev.N, len(rev.Policy.Hosts))
		case <-pctx.Done():
			px.Detail, px.Fix = "the gateway gave no network policy in 5s", "check serve's log; SIGNOFF_TOKEN needs the net:request or admin scope once tokens exist"
		}
		cancel()
	} else {
		px.Detail, px.Fix = "needs the gateway", "start the gateway first"
	}
	parts = append(parts, px)

	pin := sandbox.Part{Name: "the pinned gateway key", Required: true}
	if p, err := cfg.pin(); err != nil || p.Key == "" {
		if err == nil {
			err = fmt.Errorf("none")
		}
		pin.Detail, pin.Fix = err.Error(), "run signoff serve once on this machine (it pins its key), or set SIGNOFF_GATEWAY_KEY to the gateway's npub"
	} else {
		pin.OK, pin.Detail = true, fmt.Sprintf("%s… from %v", p.Key[:16], p.From)
	}
	parts = append(parts, pin)

	code := 0
	for _, p := range parts {
		mark := "ok  "
		switch {
		case !p.OK && p.Required:
			mark, code = "FAIL", 1
		case !p.OK:
			mark = "warn"
		}
		fmt.Fprintf(a.stdout, "%s  %s: %s\n", mark, p.Name, p.Detail)
		if !p.OK {
			fmt.Fprintf(a.stdout, "      fix: %s\n", p.Fix)
		}
	}
	if code == 0 {
		fmt.Fprintln(a.stdout, "signoff run can start an agent here.")
	} else {
		fmt.Fprintln(a.stdout, "signoff run would refuse to start until each FAIL is fixed.")
	}
	return code
}
