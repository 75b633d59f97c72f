package proxy_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/netpolicy"
	"github.com/signoff/signoff/bot/proxy"
	"github.com/signoff/signoff/signing"
)

// stack is a gateway with the network service behind its real HTTP API,
// and the proxy learning the policy from that API.
type stack struct {
	env     *bottest.Env
	svc     *netpolicy.Service
	api     *httptest.Server
	proxy   *proxy.Proxy
	proxyLn net.Listener
	alice   bottest.Person
}

func newStack(t testing.TB, policy string, tweak func(*proxy.Proxy)) *stack {
	t.Helper()
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, Timeout: time.Hour}
	env := bottest.New(t, p, nil)
	svc := &netpolicy.Service{Gateway: env.Gateway, Store: env.Store, Decisions: env.Store.WatchFinal, Logger: quiet()}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	if _, err := svc.Seed(context.Background(), "policy.yaml", []byte(policy)); err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer((&httpapi.Server{Gateway: env.Gateway, Network: svc, Logger: quiet()}).Handler())
	t.Cleanup(api.Close)
	px := &proxy.Proxy{Source: httpapi.NewClient(api.URL), Persona: "demo", Logger: quiet()}
	if tweak != nil {
		tweak(px)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { px.Run(ctx); done <- struct{}{} }()
	go func() { px.Serve(ctx, ln); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	select {
	case <-px.Loaded():
	case <-time.After(5 * time.Second):
		t.Fatal("the proxy never loaded the policy")
	}
	return &stack{env: env, svc: svc, api: api, proxy: px, proxyLn: ln, alice: alice}
}

func quiet() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (s *stack) proxyURL() *url.URL { return &url.URL{Scheme: "http", Host: s.proxyLn.Addr().String()} }

// client goes through the proxy for every destination, loopback included.
func (s *stack) client(tlsCfg *tls.Config) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(s.proxyURL()), TLSClientConfig: tlsCfg, DisableKeepAlives: true,
	}}
}

func (s *stack) approve(t testing.TB, id string) *netpolicy.Answer {
	t.Helper()
	rec, _, err := s.svc.Resolve(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	req, err := s.env.Gateway.Get(context.Background(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	raw := s.alice.Reaction(req, "✅", time.Now())
	ans, err := httpapi.NewClient(s.api.URL).NetApprove(context.Background(), id, httpapi.NetAnswerBody{Event: raw})
	if err != nil {
		t.Fatalf("approve %s: %v", id, err)
	}
	return ans
}

func (s *stack) file(t testing.TB, d netpolicy.Dest) *bot.Request {
	t.Helper()
	f, err := httpapi.NewClient(s.api.URL).FileNetRequest(context.Background(), httpapi.NetRequestBody{
		Persona: "demo", Host: d.Host, Port: d.Port, Program: d.Program, Method: d.Method, Path: d.Path, Reason: "tests need it"})
	if err != nil || f.Request == nil {
		t.Fatalf("file %+v: %+v %v", d, f, err)
	}
	return f.Request
}

// awaitRevision waits until the proxy has revision n in force.
func (s *stack) awaitRevision(t testing.TB, n int) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if r := s.proxy.Revision(); r != nil && r.N >= n {
			return time.Since(start)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("proxy still at revision %d, want %d", s.proxy.Revision().N, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func hostPort(t testing.TB, rawURL string) (string, int) {
	u, _ := url.Parse(rawURL)
	h, p, _ := net.SplitHostPort(u.Host)
	n, _ := strconv.Atoi(p)
	return h, n
}

func TestRefusedConnectFilesDraftAndApprovalLetsTheRetryThrough(t *testing.T) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret sauce") }))
	defer up.Close()
	host, port := hostPort(t, up.URL)
	s := newStack(t, "hosts: []\n", nil)
	c := s.client(up.Client().Transport.(*http.Transport).TLSClientConfig)

	_, err := c.Get(up.URL + "/pkg")
	if err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("CONNECT to a destination not in the policy: %v", err)
	}
	l, err := s.svc.List(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	if len(l.Drafts) != 1 || l.Drafts[0].Dest.Host != host || l.Drafts[0].Dest.Port != port {
		t.Fatalf("drafts %+v, want one for %s:%d", l.Drafts, host, port)
	}
	if got := l.Drafts[0].Dest.Program; got != exe {
		t.Errorf("draft program %q, want this test binary %q (from /proc)", got, exe)
	}
	c.Get(up.URL + "/pkg") // the same refusal again: counted, not duplicated
	if l, _ = s.svc.List(context.Background(), true); len(l.Drafts) != 1 || l.Drafts[0].Count != 2 {
		t.Fatalf("after a second refusal: %+v", l.Drafts)
	}

	every := s.file(t, netpolicy.Dest{Host: host, Port: port})
	covered := s.file(t, netpolicy.Dest{Host: host, Port: port, Method: "GET", Path: "/pkg"})
	other := s.file(t, netpolicy.Dest{Host: host, Port: port + 1})
	ans := s.approve(t, every.ID[:5])
	want := []string{"+ " + netpolicy.JoinHostPort(host, port) + " read-write every method"}
	if ans.Applied == nil || ans.Applied.Revision != 2 || !slices.Equal(ans.Applied.Diff, want) {
		t.Fatalf("applied %+v, want revision 2 with %q", ans.Applied, want)
	}
	if !slices.Equal(ans.Applied.Also, []string{covered.ID}) {
		t.Fatalf("also approved %v, want %s", ans.Applied.Also, covered.ID)
	}
	if r, _ := s.env.Gateway.Get(context.Background(), other.ID); r.Status != bot.Pending {
		t.Fatalf("the request the rule does not cover is %s", r.Status)
	}
	took := s.awaitRevision(t, 2)
	t.Logf("revision 2 in force at the proxy %v after the approval answered", took)
	resp, err := c.Get(up.URL + "/pkg")
	if err != nil {
		t.Fatalf("retry after approval, same proxy, nothing restarted: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "secret sauce" {
		t.Fatalf("body %q", body)
	}
}

func TestReadOnlyAndReadWriteByMethod(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s host=%s", r.Method, r.URL.Path, r.Host)
	}))
	defer up.Close()
	host, port := hostPort(t, up.URL)
	s := newStack(t, fmt.Sprintf("hosts:\n  - {host: %q, port: %d, access: read-only}\n", host, port), nil)
	c := s.client(nil)
	do := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, up.URL+path, strings.NewReader("x"))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do("GET", "/simple/"); code != 200 || body != "GET /simple/ host="+up.Listener.Addr().String() {
		t.Fatalf("GET on read-only: %d %q", code, body)
	}
	if code, _ := do("HEAD", "/simple/"); code != 200 {
		t.Fatalf("HEAD on read-only: %d", code)
	}
	code, body := do("POST", "/upload")
	if code != 403 || !strings.Contains(body, "Draft request ") || !strings.Contains(body, "signoff net request --host "+host) {
		t.Fatalf("POST on read-only: %d %q", code, body)
	}
	r := s.file(t, netpolicy.Dest{Host: host, Port: port, Method: "POST", Path: "/upload"})
	ans := s.approve(t, r.ID)
	if ans.Applied.Change != netpolicy.Widened || ans.Applied.Entry != netpolicy.JoinHostPort(host, port)+" read-write methods GET,HEAD,OPTIONS,POST" {
		t.Fatalf("applied %+v", ans.Applied)
	}
	s.awaitRevision(t, 2)
	if code, _ := do("POST", "/upload"); code != 200 {
		t.Fatalf("POST after approval: %d", code)
	}
	if code, _ := do("DELETE", "/upload"); code != 403 {
		t.Fatalf("DELETE, never approved: %d", code)
	}
}

func TestAgentCannotReachTheGatewayOrLoopbackThroughTheProxy(t *testing.T) {
	s := newStack(t, "hosts:\n  - {host: public.example, port: 80, access: read-write}\n  - {host: rebind.example, port: 443, access: read-write}\n", func(p *proxy.Proxy) {
		p.Lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil // a name that resolves to this machine
		}
	})
	c := s.client(nil)
	// The gateway's own API, on loopback, not in the policy.
	resp, err := c.Get(s.api.URL + "/v1/network/requests")
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("the gateway through the proxy: %v %v", resp, err)
	}
	resp.Body.Close()
	// A policy name that resolves to loopback (DNS rebinding) is not dialed.
	_, apiPort := hostPort(t, s.api.URL)
	resp, err = c.Get(fmt.Sprintf("http://public.example:80/"))
	if err != nil || resp.StatusCode != 502 {
		t.Fatalf("a public name resolving to loopback: %v %v", resp, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "is on this machine") {
		t.Fatalf("body %q", b)
	}
	conn := rawConnect(t, s, "rebind.example:443")
	if !strings.HasPrefix(conn, "HTTP/1.1 502") {
		t.Fatalf("CONNECT to a name resolving to loopback: %q", conn)
	}
	_ = apiPort
}

func TestProxyDoesNotDialItself(t *testing.T) {
	var s *stack
	s = newStack(t, "hosts: []\n", nil)
	_, port := hostPort(t, s.proxyURL().String())
	r := s.file(t, netpolicy.Dest{Host: "127.0.0.1", Port: port})
	s.approve(t, r.ID)
	s.awaitRevision(t, 2)
	got := rawConnect(t, s, s.proxyLn.Addr().String())
	if !strings.HasPrefix(got, "HTTP/1.1 502") || !strings.Contains(got, "is this proxy") {
		t.Fatalf("CONNECT to the proxy itself: %q", got)
	}
}

func TestHostHeaderAndDotSegmentsCannotLeaveTheAllowedDoor(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "host=%s path=%s", r.Host, r.URL.Path) }))
	defer up.Close()
	host, port := hostPort(t, up.URL)
	s := newStack(t, fmt.Sprintf("hosts:\n  - {host: %q, port: %d, access: read-only, paths: [\"/repos/*\"]}\n", host, port), nil)
	// The request line names the allowed door; the Host header another
	// site behind the same address. (net/http already takes an absolute-form
	// request's host from its URL; the proxy sets the outgoing Host from the
	// checked host as well, so this holds whichever way a refactor goes.)
	got := rawRequest(t, s, "GET http://"+up.Listener.Addr().String()+"/repos/a HTTP/1.1\r\nHost: internal.admin.example\r\n\r\n")
	if !strings.HasSuffix(got, "host="+up.Listener.Addr().String()+" path=/repos/a") {
		t.Fatalf("upstream saw %q: the Host header was passed through", got)
	}
	for _, p := range []string{"/repos/../admin", "/repos/%2e%2e/admin", "/repos/x/..", "/repos//../admin"} {
		got := rawRequest(t, s, "GET http://"+up.Listener.Addr().String()+p+" HTTP/1.1\r\nHost: "+up.Listener.Addr().String()+"\r\n\r\n")
		if !strings.HasPrefix(got, "HTTP/1.1 400") && !strings.HasPrefix(got, "HTTP/1.1 403") {
			t.Errorf("GET %s: %q", p, firstLine(got))
		}
	}
}

func TestBadInputToTheProxy(t *testing.T) {
	s := newStack(t, "hosts: []\n", nil)
	cases := []struct{ name, raw, want string }{
		{"CONNECT without a port", "CONNECT a.example HTTP/1.1\r\nHost: a.example\r\n\r\n", "HTTP/1.1 400"},
		{"CONNECT port out of range", "CONNECT a.example:99999 HTTP/1.1\r\nHost: a.example:99999\r\n\r\n", "HTTP/1.1 400"},
		{"CONNECT port zero", "CONNECT a.example:0 HTTP/1.1\r\nHost: a.example:0\r\n\r\n", "HTTP/1.1 400"},
		{"CONNECT bad host", "CONNECT a..example:443 HTTP/1.1\r\nHost: a..example:443\r\n\r\n", "HTTP/1.1 400"},
		{"CONNECT user info", "CONNECT u@a.example:443 HTTP/1.1\r\nHost: u@a.example:443\r\n\r\n", "HTTP/1.1 400"},
		{"not a proxy request", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400"},
		{"https absolute form", "GET https://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n", "HTTP/1.1 400"},
		{"huge path", "GET http://a.example/" + strings.Repeat("a", 5000) + " HTTP/1.1\r\nHost: a.example\r\n\r\n", "HTTP/1.1 414"},
		{"bare IPv6 host", "GET http://::1/ HTTP/1.1\r\nHost: ::1\r\n\r\n", "HTTP/1.1 400"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := rawRequest(t, s, c.raw); !strings.HasPrefix(got, c.want) {
				t.Fatalf("got %q, want %s", firstLine(got), c.want)
			}
		})
	}
	if l, _ := s.svc.List(context.Background(), true); len(l.Drafts) != 0 {
		t.Fatalf("bad input filed drafts: %+v", l.Drafts)
	}
}

func TestCurlThroughTheProxy(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from upstream") }))
	defer up.Close()
	host, port := hostPort(t, up.URL)
	s := newStack(t, "hosts: []\n", nil)
	run := func() (string, string) {
		out, _ := exec.Command(curl, "-s", "-x", s.proxyURL().String(), "--noproxy", "", "-w", "\n%{http_code}", up.URL+"/f").Output()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return strings.Join(lines[:len(lines)-1], "\n"), lines[len(lines)-1]
	}
	body, code := run()
	if code != "403" || !strings.Contains(body, "Allow curl to connect to "+netpolicy.JoinHostPort(host, port)) {
		t.Fatalf("curl before approval: %s %q", code, body)
	}
	l, _ := s.svc.List(context.Background(), true)
	if len(l.Drafts) != 1 || !strings.HasSuffix(l.Drafts[0].Dest.Program, "/curl") {
		t.Fatalf("draft %+v: curl not identified", l.Drafts)
	}
	r := s.file(t, netpolicy.Dest{Host: host, Port: port, Program: l.Drafts[0].Dest.Program, Method: "GET", Path: "/f"})
	s.approve(t, r.ID)
	s.awaitRevision(t, 2)
	if body, code := run(); code != "200" || body != "hello from upstream" {
		t.Fatalf("curl after approval: %s %q", code, body)
	}
	// Another program is not curl: the entry names curl's path.
	resp, err := s.client(nil).Get(up.URL + "/f")
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("another program through curl's door: %v %v", resp, err)
	}
	resp.Body.Close()
}

func rawConnect(t testing.TB, s *stack, authority string) string {
	return rawRequest(t, s, "CONNECT "+authority+" HTTP/1.1\r\nHost: "+authority+"\r\n\r\n")
}

func rawRequest(t testing.TB, s *stack, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", s.proxyLn.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, raw)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("HTTP/1.1 %s\r\n\r\n%s", resp.Status, b)
}

func firstLine(s string) string { return strings.SplitN(s, "\r\n", 2)[0] }

var _ = signing.ParseReaction
