package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/signoff/signoff/bot/proxy"
	"github.com/signoff/signoff/bot/tokens"
)

func init() { commands["proxy"] = proxyCmd }

// proxyCmd runs the egress proxy, learning the policy from the gateway.
func proxyCmd(ctx context.Context, a *app, args []string) int {
	fs := a.flags("proxy", "proxy [--listen 127.0.0.1:8181] [--persona P]")
	listen := fs.String("listen", "127.0.0.1:8181", "address to serve the proxy on")
	persona := fs.String("persona", "", "persona the drafts are filed for (default $SIGNOFF_PERSONA)")
	maxConns := fs.Int("max-conns", 512, "clients served at once")
	fs.Usage = func() {
		fmt.Fprint(a.stderr, `usage: signoff proxy [--listen 127.0.0.1:8181] [--persona P]

HTTPS to a door that names methods or paths (read-only included) is
inspected: the proxy opens TLS with its local CA ($SIGNOFF_DATA_DIR/proxy-ca.pem,
key proxy-ca.key mode 0600, made on first start) and checks each request; a
door with every method is a plain tunnel. Clients trust the CA through
$SIGNOFF_DATA_DIR/proxy-ca-bundle.pem (system roots + the CA) named by
SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE and
GIT_SSL_CAINFO; one that does not gets a TLS failure, never a tunnel
(docs/network.md).

flags:
`)
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.failf("proxy takes flags only (unexpected %q)", fs.Arg(0))
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	log, err := cfg.logger(a.stderr)
	if err != nil {
		return a.fail(err)
	}
	if *persona == "" {
		*persona = cfg.Persona
	}
	// The CA that opens TLS on doors narrowed to methods or paths: made
	// once, its key in the data dir (which the sandbox hides).
	ca, err := proxy.LoadCA(cfg.DataDir)
	if err != nil {
		return a.failf("cannot load the proxy's CA: %v", err)
	}
	bundle := filepath.Join(cfg.DataDir, "proxy-ca-bundle.pem")
	if err := ca.WriteBundle(bundle); err != nil {
		return a.fail(err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return a.failf("cannot listen on %s: %v", *listen, err)
	}
	p := &proxy.Proxy{Source: cfg.client(a.stderr), Persona: *persona, Logger: log, MaxConns: *maxConns, CA: ca}
	// An extension's token sent as proxy credentials opens its declared
	// doors: checked with the gateway under that token.
	p.CheckToken = func(ctx context.Context, tok string) (*tokens.Token, error) {
		c := cfg.client(a.stderr)
		c.Token = tok
		return c.SelfToken(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); p.Run(ctx) }()
	log.Info("signoff proxy listening; loading the network policy", "addr", ln.Addr().String(), "gateway", cfg.URL, "persona", *persona)
	serveErr := make(chan error, 1)
	go func() { serveErr <- p.Serve(ctx, ln) }() // refuses everything until a policy is in force
	for loaded := false; !loaded; {
		select {
		case <-p.Loaded():
			loaded = true
		case <-ctx.Done():
			cancel()
			wg.Wait()
			return 0
		case <-time.After(5 * time.Second):
			fmt.Fprintf(a.stderr, "still waiting for the network policy from the gateway at %s (is `signoff serve` running?); refusing everything meanwhile\n", cfg.URL)
		}
	}
	fmt.Fprintf(a.stderr, "network policy revision %d in force; %s\n", p.Revision().N, proxyHint(ln.Addr()))
	fmt.Fprintf(a.stderr, "HTTPS to doors narrowed to methods or paths is inspected with the CA %s; clients trust it with %s (system roots and the CA), e.g. %s\n",
		ca.CertFile, bundle, strings.Join(proxy.TrustEnv(bundle)[:1], " "))
	if a.ready != nil {
		a.ready(ln.Addr().String())
	}
	err = <-serveErr
	cancel()
	wg.Wait()
	if err != nil {
		return a.failf("proxy stopped: %v", err)
	}
	return 0
}

// proxyHint tells how to point an agent at the proxy listening on addr. A
// wildcard address (0.0.0.0, [::]) is not one to connect to: the hint
// names loopback, and says another host uses this one's address.
func proxyHint(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return "start the agent with " + proxyVars("http://"+addr.String())
	}
	local := net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
	return fmt.Sprintf("start the agent with %s (listening on every address: an agent on another host or container uses this host's address or name, port %d)", proxyVars("http://"+local), tcp.Port)
}

// proxyVars is the proxy's variables in both cases: curl reads only the
// lower-case http_proxy, other tools only the upper-case ones.
func proxyVars(url string) string {
	return fmt.Sprintf("HTTPS_PROXY=%[1]s HTTP_PROXY=%[1]s https_proxy=%[1]s http_proxy=%[1]s", url)
}
