package proxy_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/netpolicy"
	"github.com/signoff/signoff/bot/proxy"
	"github.com/signoff/signoff/bot/tokens"
)

// doorStack is a gateway with tokens required, its network service, and
// the proxy checking proxy credentials with that gateway.
type doorStack struct {
	env    *bottest.Env
	svc    *netpolicy.Service
	api    *httptest.Server
	secret tokens.Secret
	proxy  *proxy.Proxy
	ln     net.Listener
	tls    *tls.Config // trusts the tests' TLS upstreams
}

func newDoorStack(t testing.TB, policy string) *doorStack {
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
	up := httptest.NewTLSServer(http.NotFoundHandler()) // every httptest TLS server has the same certificate
	up.Close()
	s := &doorStack{env: env, svc: svc, secret: tokens.NewSecret(), tls: up.Client().Transport.(*http.Transport).TLSClientConfig}
	s.api = httptest.NewServer((&httpapi.Server{Gateway: env.Gateway, Network: svc, Logger: quiet(),
		Auth: &httpapi.Auth{Tokens: env.Store, Secret: s.secret, Audit: env.Audit, Require: true}}).Handler())
	t.Cleanup(s.api.Close)
	src := httpapi.NewClient(s.api.URL)
	src.Token = s.mint(t, tokens.Spec{Name: "proxy", Scopes: []tokens.Scope{tokens.NetRequest}})
	s.proxy = &proxy.Proxy{Source: src, Persona: "demo", Logger: quiet(), TokenTTL: 100 * time.Millisecond,
		CheckToken: func(ctx context.Context, tok string) (*tokens.Token, error) {
			c := httpapi.NewClient(s.api.URL)
			c.Token = tok
			return c.SelfToken(ctx)
		}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ln = ln
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { s.proxy.Run(ctx); done <- struct{}{} }()
	go func() { s.proxy.Serve(ctx, ln); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	select {
	case <-s.proxy.Loaded():
	case <-time.After(5 * time.Second):
		t.Fatal("the proxy never loaded the policy")
	}
	return s
}

func (s *doorStack) mint(t testing.TB, spec tokens.Spec) string {
	t.Helper()
	plain, tok, err := tokens.New(s.secret, spec, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.env.Store.CreateToken(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	return plain
}

// client goes through the proxy with user (and password) as its proxy
// credentials; no user: none.
func (s *doorStack) client(user *url.Userinfo) *http.Client {
	u := &url.URL{Scheme: "http", Host: s.ln.Addr().String(), User: user}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(u), DisableKeepAlives: true,
		TLSClientConfig: s.tls,
	}}
}

func (s *doorStack) drafts(t testing.TB) []netpolicy.Draft {
	t.Helper()
	l, err := s.svc.List(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	return l.Drafts
}

func get(c *http.Client, u string) (int, string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func tlsUpstream(t testing.TB, body string) (*httptest.Server, string) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
	t.Cleanup(up.Close)
	h, p := hostPort(t, up.URL)
	return up, netpolicy.JoinHostPort(h, p)
}

func TestExtensionReachesItsDeclaredDoorAndNothingElse(t *testing.T) {
	door, doorAddr := tlsUpstream(t, "door")
	other := httptest.NewTLSServer(door.Config.Handler) // same certificate pool is not needed: refused before TLS
	defer other.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain "+r.URL.Path) }))
	defer plain.Close()
	ph, pp := hostPort(t, plain.URL)
	s := newDoorStack(t, "hosts: []\n")
	tok := s.mint(t, tokens.Spec{Name: "ext-pkgbot", Ext: "pkgbot", Scopes: []tokens.Scope{tokens.ReadRequests},
		Network: []string{doorAddr, netpolicy.JoinHostPort(ph, pp)}})

	ext := s.client(url.UserPassword("ext", tok))
	if code, body, err := get(ext, door.URL+"/simple"); err != nil || code != 200 || body != "door" {
		t.Fatalf("extension to its declared door: %d %q %v", code, body, err)
	}
	if code, body, err := get(ext, plain.URL+"/x"); err != nil || code != 200 || body != "plain /x" {
		t.Fatalf("extension to its declared plain-HTTP door: %d %q %v", code, body, err)
	}
	// The token as the user name, no password (HTTPS_PROXY=http://sgn_…@host:port).
	if code, _, err := get(s.client(url.User(tok)), door.URL+"/"); err != nil || code != 200 {
		t.Fatalf("token as the user name: %d %v", code, err)
	}

	// Not a door: refused, and the draft names the extension.
	oh, op := hostPort(t, other.URL)
	if _, _, err := get(ext, other.URL+"/"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("extension to a destination it did not declare: %v", err)
	}
	d := s.drafts(t)
	if len(d) != 1 || d[0].Dest.Host != oh || d[0].Dest.Port != op || d[0].Dest.Extension != "pkgbot" || !strings.Contains(d[0].Reason, `(extension "pkgbot")`) {
		t.Fatalf("drafts %+v, want one for %s:%d naming extension pkgbot", d, oh, op)
	}

	// Another client, no token: the same door is closed to it.
	if _, _, err := get(s.client(nil), door.URL+"/simple"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("client without the token to the extension's door: %v", err)
	}
	if code, _, err := get(s.client(nil), plain.URL+"/x"); err != nil || code != 403 {
		t.Fatalf("client without the token, plain HTTP to the extension's door: %d %v", code, err)
	}
	// A token without doors opens nothing more than the policy.
	bare := s.mint(t, tokens.Spec{Name: "bare", Scopes: []tokens.Scope{tokens.ReadRequests}})
	if code, _, err := get(s.client(url.UserPassword("x", bare)), plain.URL+"/x"); err != nil || code != 403 {
		t.Fatalf("token without doors: %d %v", code, err)
	}
	// The door is its host:port only: the next port on the same host stays shut.
	if code, _, err := get(ext, "http://"+netpolicy.JoinHostPort(ph, pp+1)+"/x"); err != nil || code != 403 {
		t.Fatalf("next port on the door's host: %d %v", code, err)
	}
	if r := s.proxy.Revision(); r.N != 1 || len(r.Policy.Hosts) != 0 {
		t.Fatalf("the policy changed: revision %d %+v", r.N, r.Policy)
	}
}

func TestRevokedExtensionTokenLosesItsDoor(t *testing.T) {
	door, doorAddr := tlsUpstream(t, "door")
	s := newDoorStack(t, "hosts: []\n")
	tok := s.mint(t, tokens.Spec{Name: "ext-pkgbot", Ext: "pkgbot", Scopes: []tokens.Scope{tokens.ReadRequests}, Network: []string{doorAddr}})
	ext := s.client(url.UserPassword("ext", tok))
	if code, _, err := get(ext, door.URL+"/"); err != nil || code != 200 {
		t.Fatalf("before revocation: %d %v", code, err)
	}
	if _, err := s.env.Store.RevokeToken(context.Background(), "ext-pkgbot"); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	for {
		_, _, err := get(ext, door.URL+"/")
		if err != nil && strings.Contains(err.Error(), "Proxy Authentication Required") {
			break
		}
		if time.Since(revoked) > 2*time.Second {
			t.Fatalf("revoked token still opens its door %v after revocation (TTL 100ms): %v", time.Since(revoked), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("revoked token refused %v after revocation", time.Since(revoked))
	if len(s.drafts(t)) != 0 {
		t.Fatalf("a refused token filed drafts: %+v", s.drafts(t))
	}
}

func TestExpiredExtensionTokenGets407(t *testing.T) {
	door, doorAddr := tlsUpstream(t, "door")
	s := newDoorStack(t, "hosts: []\n")
	tok := s.mint(t, tokens.Spec{Name: "ext-short", Ext: "short", Scopes: []tokens.Scope{tokens.ReadRequests}, Network: []string{doorAddr}, TTL: 300 * time.Millisecond})
	time.Sleep(400 * time.Millisecond)
	if _, _, err := get(s.client(url.UserPassword("ext", tok)), door.URL+"/"); err == nil || !strings.Contains(err.Error(), "Proxy Authentication Required") {
		t.Fatalf("expired token: %v", err)
	}
}

// rawProxy sends one request head to the proxy and returns the answer.
func rawProxy(t *testing.T, addr, head string) (int, string, http.Header) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, head)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", head, err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestGarbageProxyAuthorizationGets407AndChangesNothing(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "open") }))
	defer plain.Close()
	ph, pp := hostPort(t, plain.URL)
	hp := netpolicy.JoinHostPort(ph, pp)
	// The destination is open to everyone by the policy: bad credentials
	// still get 407, never a fallback to the policy alone.
	s := newDoorStack(t, "hosts:\n  - host: "+ph+"\n    port: "+strconv.Itoa(pp)+"\n    access: read-write\n")
	good := s.mint(t, tokens.Spec{Name: "ext-pkgbot", Ext: "pkgbot", Scopes: []tokens.Scope{tokens.ReadRequests}, Network: []string{"pypi.org:443"}})
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	forged := good[:len(good)-1] + map[bool]string{true: "B", false: "A"}[good[len(good)-1] == 'A']
	unknown := "sgn_AAAAAAAAAAAAAAAA_" + strings.Repeat("A", 43)
	bad := map[string]string{
		"not base64":          "Basic !!!!",
		"no scheme":           good,
		"digest":              "Digest username=ext",
		"not a token":         "Basic " + b64("ext:hunter2"),
		"forged secret":       "Basic " + b64("ext:"+forged),
		"unknown id":          "Basic " + b64("ext:"+unknown),
		"bearer forged":       "Bearer " + forged,
		"token with newline":  "Basic " + b64("ext:"+good+"\n"),
		"two tokens":          "Basic " + b64(good+":"+good+"x"),
		"empty basic":         "Basic ",
		"colon only":          "Basic " + b64(":"),
		"huge":                "Basic " + strings.Repeat("QUFB", 2000),
		"token with trailing": "Basic " + b64("ext:"+good+" "),
	}
	for name, h := range bad {
		for _, head := range []string{
			"CONNECT " + hp + " HTTP/1.1\r\nHost: " + hp + "\r\nProxy-Authorization: " + h + "\r\n\r\n",
			"GET http://" + hp + "/ HTTP/1.1\r\nHost: " + hp + "\r\nProxy-Authorization: " + h + "\r\nConnection: close\r\n\r\n",
		} {
			code, body, hdr := rawProxy(t, s.ln.Addr().String(), head)
			if code != http.StatusProxyAuthRequired || !strings.Contains(body, "nothing is let through with these credentials") || hdr.Get("Proxy-Authenticate") == "" {
				t.Errorf("%s (%s): %d %q", name, strings.Fields(head)[0], code, body)
			}
		}
	}
	if d := s.drafts(t); len(d) != 0 {
		t.Fatalf("bad credentials filed drafts: %+v", d)
	}
	if r := s.proxy.Revision(); r.N != 1 {
		t.Fatalf("revision %d", r.N)
	}
	// And the good token and no token still work as before.
	for _, u := range []*url.Userinfo{nil, url.UserPassword("ext", good)} {
		if code, body, err := get(s.client(u), plain.URL+"/"); err != nil || code != 200 || body != "open" {
			t.Fatalf("after the garbage, %v: %d %q %v", u, code, body, err)
		}
	}
}

func TestCurlCarriesTheExtensionToken(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" {
			io.WriteString(w, "LEAKED the proxy credentials upstream")
			return
		}
		io.WriteString(w, "door")
	}))
	defer plain.Close()
	door, doorAddr := tlsUpstream(t, "tls door")
	ph, pp := hostPort(t, plain.URL)
	s := newDoorStack(t, "hosts: []\n")
	tok := s.mint(t, tokens.Spec{Name: "ext-pkgbot", Ext: "pkgbot", Scopes: []tokens.Scope{tokens.ReadRequests}, Network: []string{netpolicy.JoinHostPort(ph, pp), doorAddr}})
	run := func(proxyURL, target string, extra ...string) (string, string) {
		args := append([]string{"-s", "-k", "-x", proxyURL, "--noproxy", "", "-w", "\n%{http_code}"}, extra...)
		out, _ := exec.Command(curl, append(args, target)...).Output()
		body, code, _ := strings.Cut(string(out), "\n")
		if i := strings.LastIndex(string(out), "\n"); i >= 0 {
			body, code = string(out)[:i], string(out)[i+1:]
		}
		return code, body
	}
	withTok := "http://ext:" + tok + "@" + s.ln.Addr().String()
	if code, body := run(withTok, plain.URL+"/"); code != "200" || body != "door" {
		t.Fatalf("curl with the token, plain HTTP door: %s %q", code, body)
	}
	if code, body := run(withTok, door.URL+"/"); code != "200" || body != "tls door" {
		t.Fatalf("curl with the token, HTTPS door: %s %q", code, body)
	}
	if code, _ := run("http://"+s.ln.Addr().String(), plain.URL+"/"); code != "403" {
		t.Fatalf("curl without the token: %s", code)
	}
	if code, body := run("http://ext:sgn_nope@"+s.ln.Addr().String(), plain.URL+"/"); code != "407" || !strings.Contains(body, "nothing is let through") {
		t.Fatalf("curl with a bad token: %s %q", code, body)
	}
}

func TestTunnelOpenedByADoorEndsWhenTheTokenIsRevoked(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }() // echo until the proxy hangs up
		}
	}()
	s := newDoorStack(t, "hosts: []\n")
	tok := s.mint(t, tokens.Spec{Name: "ext-pkgbot", Ext: "pkgbot", Scopes: []tokens.Scope{tokens.ReadRequests}, Network: []string{up.Addr().String()}})
	c, err := net.DialTimeout("tcp", s.ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	auth := base64.StdEncoding.EncodeToString([]byte("ext:" + tok))
	io.WriteString(c, "CONNECT "+up.Addr().String()+" HTTP/1.1\r\nHost: "+up.Addr().String()+"\r\nProxy-Authorization: Basic "+auth+"\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT through the door: %v %v", resp, err)
	}
	io.WriteString(c, "ping\n")
	if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("echo through the tunnel: %q %v", line, err)
	}
	if _, err := s.env.Store.RevokeToken(context.Background(), "ext-pkgbot"); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	if _, err := br.ReadString('\n'); err == nil {
		t.Fatal("the tunnel still carries data after the revocation")
	} else if strings.Contains(err.Error(), "timeout") {
		t.Fatalf("the tunnel was not closed within 10 s of the revocation: %v", err)
	}
	t.Logf("tunnel closed %v after the revocation (TTL 100ms)", time.Since(revoked))
}
