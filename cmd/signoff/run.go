package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/proxy"
	"github.com/signoff/signoff/bot/sandbox"
)

func init() { commands["run"] = runCmd }

// proxyPort is the egress proxy's port inside a sandbox.
const proxyPort = 8181

// sandboxBundle is where the agent finds the roots it trusts: the
// system's and the proxy's CA (for the doors it inspects).
const sandboxBundle = "/tmp/signoff/ca-bundle.pem"

// runCmd starts an agent in the sandbox: walls from the persona and the
// defaults, doors to the egress proxy and the gateway.
func runCmd(ctx context.Context, a *app, args []string) int {
	fs := a.flags("run", "run [--persona P] [--workspace DIR] -- CMD [ARGS…]")
	persona := fs.String("persona", "", "persona whose walls and doors apply (default $SIGNOFF_PERSONA)")
	workspace := fs.String("workspace", "", "the folder the agent may write (default: the current folder)")
	quiet := fs.Bool("quiet", false, "no start-up line")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return a.failf("run needs a command after --: signoff run -- claude")
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	if *persona == "" {
		*persona = cfg.Persona
	}
	if *workspace == "" {
		if *workspace, err = os.Getwd(); err != nil {
			return a.fail(err)
		}
	}
	personas, err := loadPersonas(cfg.Personas, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return a.fail(err)
	}
	i := slices.IndexFunc(personas, func(p bot.Persona) bool { return p.Name == *persona })
	if i < 0 {
		names := make([]string, len(personas))
		for i, p := range personas {
			names[i] = p.Name
		}
		return a.failf("unknown persona %q (personas: %s)", *persona, strings.Join(names, ", "))
	}
	p := personas[i]
	walls, err := sandbox.DefaultWalls()
	if err != nil {
		return a.fail(err)
	}
	if err := sandbox.Require(); err != nil {
		return a.fail(err)
	}
	gw, err := url.Parse(cfg.URL)
	if err != nil || gw.Host == "" {
		return a.failf("SIGNOFF_URL %q is not a URL", cfg.URL)
	}
	client := cfg.client(a.stderr)
	if err := gatewayUp(ctx, cfg.URL); err != nil {
		return a.failf("the gateway at %s does not answer (start it with `signoff serve`): %v; nothing started", cfg.URL, err)
	}
	pin, err := cfg.pin()
	if err != nil || pin.Key == "" {
		if err == nil {
			err = fmt.Errorf("no gateway key is pinned")
		}
		return a.failf("%v: the agent's hook could not trust any answer (run `signoff serve` once on this machine, or set SIGNOFF_GATEWAY_KEY)", err)
	}

	// The sandbox's own token, when the gateway wants tokens: made by the
	// person (their key, NIP-98, or their admin token), never theirs, never
	// admin, revoked when the agent ends. A gateway still open on loopback
	// (no token made yet) gets none: the door passes only agent routes.
	token := ""
	if !gatewayOpen(ctx, cfg.URL) {
		sign, err := personAuth(a, cfg)
		if err != nil {
			return a.fail(err)
		}
		if sign == nil && cfg.Token == "" {
			return a.failf("the gateway at %s wants tokens: signoff run makes the sandbox's own with your key (SIGNOFF_KEY, the key `signoff init` wrote, or SIGNOFF_BUNKER) or your admin token (SIGNOFF_TOKEN), and found neither", cfg.URL)
		}
		admin := cfg.client(a.stderr)
		admin.Person = sign
		name := "run-" + p.Name + "-" + randomHex(4)
		ct, err := admin.CreateToken(ctx, httpapi.NewToken{Name: name, Scopes: sandbox.AgentScopes, Personas: []string{p.Name}, Expires: "24h"})
		if err != nil {
			return a.failf("cannot make the sandbox's token: %v", err)
		}
		token = ct.Token
		client.Token = token // the proxy files drafts as the sandbox
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := admin.RevokeToken(rctx, name); err != nil {
				fmt.Fprintf(a.stderr, "signoff run: could not revoke the sandbox's token %s: %v (revoke it: signoff tokens revoke %s)\n", name, err, name)
			}
		}()
	}

	// The CA that opens TLS on doors narrowed to methods or paths: its key
	// stays in the data dir (hidden inside); the agent trusts its bundle.
	ca, err := proxy.LoadCA(cfg.DataDir)
	if err != nil {
		return a.failf("the egress proxy cannot start: its CA: %v; nothing started", err)
	}
	bundlePath := filepath.Join(cfg.DataDir, "proxy-ca-bundle.pem")
	if stale(bundlePath, ca.CertFile, systemRoots) {
		if err := ca.WriteBundle(bundlePath); err != nil {
			return a.failf("the egress proxy cannot start: %v; nothing started", err)
		}
	}
	log, _ := cfg.logger(io.Discard)
	px := &proxy.Proxy{Source: client, Persona: p.Name, Logger: log, MaxConns: 512, CA: ca}
	pctx, stopProxy := context.WithCancel(ctx)
	defer stopProxy()
	go func() { _ = px.Run(pctx) }()
	select {
	case <-px.Loaded():
	case <-time.After(10 * time.Second):
		return a.failf("the egress proxy could not load the network policy from the gateway at %s in 10s; nothing started", cfg.URL)
	case <-ctx.Done():
		return 2
	}

	gwPort := 8080
	if loopbackURL(cfg.URL) {
		if n, err := strconv.Atoi(gw.Port()); err == nil {
			gwPort = n
		}
	}
	if gwPort == proxyPort {
		gwPort = proxyPort + 1
	}
	door := &sandbox.GatewayDoor{Target: gw, Token: token}
	doors := []sandbox.Door{
		{Name: "proxy", Port: proxyPort, Serve: px.Serve},
		{Name: "gateway", Port: gwPort, Serve: door.Serve},
	}
	proxyURL := "http://127.0.0.1:" + strconv.Itoa(proxyPort)
	set := map[string]string{
		"HTTP_PROXY": proxyURL, "HTTPS_PROXY": proxyURL, "ALL_PROXY": proxyURL,
		"http_proxy": proxyURL, "https_proxy": proxyURL, "all_proxy": proxyURL,
		"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
		"SIGNOFF_URL":         "http://127.0.0.1:" + strconv.Itoa(gwPort),
		"SIGNOFF_GATEWAY_KEY": pin.Key,
		"SIGNOFF_PERSONA":     p.Name,
		"SIGNOFF_SANDBOX":     "1",
		"TMPDIR":              "/tmp",
	}
	for _, kv := range proxy.TrustEnv(sandboxBundle) {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = v
	}
	home, _ := os.UserHomeDir()
	confDir := filepath.Dir(defaultKeyPath())
	hidden := []string{confDir, cfg.DataDir, cfg.keyPath(), cfg.AuditPath, filepath.Dir(cfg.AuditPath), defaultPinPath()}
	if cfg.TokenFile != "" {
		hidden = append(hidden, cfg.TokenFile)
	}
	if cfg.GatewayPin != "" {
		hidden = append(hidden, cfg.GatewayPin)
	}
	var guarded []string
	for _, g := range []string{cfg.Personas, cfg.Rules, cfg.NetPolicy, cfg.NetBoundary} {
		if g == "" {
			continue
		}
		if abs, err := filepath.Abs(g); err == nil {
			guarded = append(guarded, abs)
		}
	}
	plan, err := sandbox.MakePlan(sandbox.Options{
		Home: home, Workspace: *workspace, Argv: argv, Env: os.Environ(), Walls: walls, Persona: p,
		Hidden: hidden, Guarded: guarded, Doors: doors, SetEnv: set, DropEnv: []string{"SIGNOFF_*"},
	})
	if err != nil {
		return a.fail(err)
	}
	plan.Files = map[string]string{sandboxBundle: bundlePath}
	if !*quiet {
		rev := px.Revision()
		fmt.Fprintln(a.stderr, sandbox.StartLine(plan, home, sandbox.DoorsLine{
			Proxy: "127.0.0.1:" + strconv.Itoa(proxyPort), Revision: rev.N, Hosts: len(rev.Policy.Hosts),
			Gateway: "127.0.0.1:" + strconv.Itoa(gwPort), Token: token != "",
		}))
		if plan.GuideArgs > 0 {
			fmt.Fprintf(a.stderr, "signoff run: added the sandbox guide to %s's instructions (how to see what was blocked and ask for a door)\n", plan.Harness)
		}
	}
	code, err := sandbox.Run(ctx, plan, doors, sandbox.Stdio{In: a.stdin, Out: a.stdout, Err: a.stderr})
	if err != nil {
		return a.fail(err)
	}
	return code
}

// systemRoots is where Debian-like systems keep the roots WriteBundle
// copies; a change there makes the bundle stale.
const systemRoots = "/etc/ssl/certs/ca-certificates.crt"

// stale reports whether file is missing or older than any of its sources
// that exist.
func stale(file string, sources ...string) bool {
	fi, err := os.Stat(file)
	if err != nil {
		return true
	}
	for _, src := range sources {
		if si, err := os.Stat(src); err == nil && si.ModTime().After(fi.ModTime()) {
			return true
		}
	}
	return false
}

// gatewayOpen reports whether the gateway takes a call with no token (on
// loopback, before any token exists).
func gatewayOpen(ctx context.Context, base string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/requests?status=pending", nil)
	if err != nil {
		return false
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// gatewayUp checks that the gateway at base answers /healthz.
func gatewayUp(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("/healthz answered %s", res.Status)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
