package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

func init() { commands["healthcheck"] = healthcheck }

// healthcheck asks the local gateway whether it is alive (or, with
// --ready, ready to serve) and exits 0 or 1. It is the image's
// HEALTHCHECK: the distroless image has no shell and no curl.
func healthcheck(ctx context.Context, a *app, args []string) int {
	fs := a.flags("healthcheck", "healthcheck [--ready] [--url URL | --listening ADDR] [--timeout D]")
	ready := fs.Bool("ready", false, "check /readyz (the store answers and holds the personas) instead of /healthz")
	base := fs.String("url", "", "the gateway (default: SIGNOFF_URL)")
	listening := fs.String("listening", "", "instead of a gateway, check that something accepts connections at host:port (the egress proxy's container: `signoff proxy` answers no health route)")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.failf("healthcheck takes no arguments")
	}
	if *listening != "" {
		if *base != "" || *ready {
			return a.failf("healthcheck: --listening checks a port, not a gateway: drop --url and --ready")
		}
		c, err := (&net.Dialer{Timeout: *timeout}).DialContext(ctx, "tcp", *listening)
		if err != nil {
			fmt.Fprintf(a.stderr, "signoff: unhealthy: nothing accepts connections at %s: %v\n", *listening, err)
			return 1
		}
		c.Close()
		fmt.Fprintf(a.stdout, "ok: %s accepts connections\n", *listening)
		return 0
	}
	if *base == "" {
		cfg, err := loadConfig()
		if err != nil {
			return a.fail(err)
		}
		*base = cfg.URL
	}
	path := "/healthz"
	if *ready {
		path = "/readyz"
	}
	url := strings.TrimRight(*base, "/") + path
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return a.failf("healthcheck: %s is not a URL: %v", url, err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(a.stderr, "signoff: unhealthy: cannot reach %s: %v\n", url, err)
		return 1
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	if res.StatusCode != http.StatusOK {
		fmt.Fprintf(a.stderr, "signoff: unhealthy: %s answered %s: %s\n", url, res.Status, strings.TrimSpace(string(body)))
		return 1
	}
	fmt.Fprintf(a.stdout, "ok: %s\n", url)
	return 0
}
