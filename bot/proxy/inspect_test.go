package proxy_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/signoff/signoff/bot/proxy"
)

// recorder is an HTTPS upstream that notes every request it is sent.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func (u *recorder) calls() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string{}, u.seen...)
}

func newRecorder(t testing.TB, cert *tls.Certificate) *recorder {
	u := &recorder{}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.Method+" "+r.URL.Path)
		u.mu.Unlock()
		io.WriteString(w, "upstream "+r.Method+" "+r.URL.Path)
	}))
	if cert != nil {
		u.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
	}
	u.StartTLS()
	t.Cleanup(u.Close)
	return u
}

// inspecting is a stack whose proxy has a CA and trusts the upstream's
// own certificate (as the system roots would a public site's).
func inspecting(t testing.TB, policy string, up *recorder) (*stack, *proxy.CA) {
	t.Helper()
	ca, err := proxy.LoadCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(up.Certificate())
	s := newStack(t, policy, func(p *proxy.Proxy) { p.CA = ca; p.UpstreamRoots = roots })
	return s, ca
}

// curlVia runs curl through the proxy with CONNECT (-p), trusting cacert
// ("" for the system's roots); it returns the status (or curl's exit
// code as "exit N") and the body.
func curlVia(t testing.TB, s *stack, cacert string, args ...string) (string, string) {
	t.Helper()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is not installed: the proxy's HTTPS tests need it")
	}
	a := []string{"-s", "-S", "-p", "-x", "http://" + s.proxyLn.Addr().String(), "--noproxy", "", "-w", "\n%{http_code}", "--max-time", "10"}
	if cacert != "" {
		a = append(a, "--cacert", cacert)
	}
	cmd := exec.Command(curl, append(a, args...)...)
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE=/nonexistent", "CURL_CA_BUNDLE=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return fmt.Sprintf("exit %d", ee.ExitCode()), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndex(string(out), "\n")
	return string(out)[i+1:], string(out)[:i]
}

func readOnlyDoor(t testing.TB, u *recorder, paths string) string {
	h, p := hostPort(t, u.URL)
	return fmt.Sprintf("hosts:\n  - {host: %q, port: %d, access: read-only, paths: [%s]}\n", h, p, paths)
}

// The attack: a door read-only on /index.html of an HTTPS
// upstream; the agent POSTs and DELETEs through CONNECT (curl -p).
func TestAgentCannotWriteThroughAReadOnlyHTTPSDoor(t *testing.T) {
	up := newRecorder(t, nil)
	s, ca := inspecting(t, readOnlyDoor(t, up, "/index.html"), up)

	code, body := curlVia(t, s, ca.CertFile, up.URL+"/index.html")
	if code != "200" || body != "upstream GET /index.html" {
		t.Errorf("GET /index.html through the read-only door: %s %q", code, body)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"POST /upload", []string{"-X", "POST", "-d", "evil", up.URL + "/upload"}},
		{"POST /index.html", []string{"-X", "POST", "-d", "evil", up.URL + "/index.html"}},
		{"DELETE /index.html", []string{"-X", "DELETE", up.URL + "/index.html"}},
		{"GET /admin", []string{up.URL + "/admin"}},
		{"GET /index.html/../admin", []string{"--path-as-is", up.URL + "/index.html/../admin"}},
		{"GET /index.html for another Host", []string{"-H", "Host: admin.internal", up.URL + "/index.html"}},
	} {
		// With the CA trusted, and with -k: the attacker needs no trust.
		for _, extra := range [][]string{nil, {"-k"}} {
			code, body := curlVia(t, s, ca.CertFile, append(extra, c.args...)...)
			if code == "200" || strings.Contains(body, "upstream") {
				t.Errorf("%s %v through a read-only door on /index.html: %s %q", c.name, extra, code, body)
			}
		}
	}
	code, body = curlVia(t, s, ca.CertFile, "-X", "POST", "-d", "evil", up.URL+"/upload")
	if code != "403" || !strings.Contains(body, "POST https://") || !strings.Contains(body, "/upload is not allowed") {
		t.Errorf("the refusal does not name the call: %s %q", code, body)
	}
	if got := up.calls(); len(got) != 1 || got[0] != "GET /index.html" {
		t.Fatalf("the upstream was sent %q, want only GET /index.html", got)
	}
	l, err := s.svc.List(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if d := l.Drafts; len(d) == 0 || d[len(d)-1].Dest.Method == "" {
		t.Errorf("a refused inspected call drafts its method and path: %+v", d)
	}
}

func TestAgentCannotReachAnUpstreamWithABadCertificate(t *testing.T) {
	// The upstream's certificate is signed by a CA nobody trusts.
	rogue, err := proxy.LoadCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := rogue.Leaf("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	bad := newRecorder(t, leaf)
	good := newRecorder(t, nil) // UpstreamRoots trusts this one, not the rogue
	h, p := hostPort(t, bad.URL)
	ca, err := proxy.LoadCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(good.Certificate())
	s := newStack(t, fmt.Sprintf("hosts:\n  - {host: %q, port: %d, access: read-only}\n", h, p), func(px *proxy.Proxy) { px.CA = ca; px.UpstreamRoots = roots })
	code, body := curlVia(t, s, ca.CertFile, bad.URL+"/index.html")
	if code != "502" || !strings.Contains(body, "upstream certificate") || !strings.Contains(body, "not valid") || !strings.Contains(body, "unknown authority") {
		t.Fatalf("GET through an inspected door to an upstream with a bad certificate: %s %q", code, body)
	}
	if got := bad.calls(); len(got) != 0 {
		t.Fatalf("the upstream with a bad certificate was sent %q", got)
	}
}

func TestClientNotTrustingTheCAGetsNoTunnel(t *testing.T) {
	up := newRecorder(t, nil)
	s, _ := inspecting(t, readOnlyDoor(t, up, "/index.html"), up)
	// Trusting the upstream's own certificate is no help: the proxy shows its own.
	upPEM := filepath.Join(t.TempDir(), "upstream.pem")
	os.WriteFile(upPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw}), 0o644)
	for _, cacert := range []string{"", upPEM} {
		code, body := curlVia(t, s, cacert, up.URL+"/index.html")
		if code != "exit 60" && code != "exit 35" {
			t.Errorf("a client trusting %q, not the proxy CA: %s %q, want a TLS failure", cacert, code, body)
		}
	}
	// Go's client too.
	c := s.client(&tls.Config{RootCAs: x509.NewCertPool()})
	if _, err := c.Get(up.URL + "/index.html"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Go client not trusting the CA: %v", err)
	}
	if got := up.calls(); len(got) != 0 {
		t.Fatalf("the upstream was sent %q by clients that never trusted the proxy", got)
	}
}

func TestOpenDoorStaysAPlainTunnel(t *testing.T) {
	up := newRecorder(t, nil)
	h, p := hostPort(t, up.URL)
	s, _ := inspecting(t, fmt.Sprintf("hosts:\n  - {host: %q, port: %d, access: read-write}\n", h, p), up)
	// The client sees the upstream's own certificate: nothing was opened.
	upPEM := filepath.Join(t.TempDir(), "upstream.pem")
	os.WriteFile(upPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw}), 0o644)
	if code, body := curlVia(t, s, upPEM, "-X", "DELETE", up.URL+"/x"); code != "200" || body != "upstream DELETE /x" {
		t.Fatalf("DELETE through a read-write door with every method: %s %q", code, body)
	}
}

func TestNarrowedDoorWithoutACAIsRefused(t *testing.T) {
	up := newRecorder(t, nil)
	s := newStack(t, readOnlyDoor(t, up, "/index.html"), nil)
	upPEM := filepath.Join(t.TempDir(), "upstream.pem")
	os.WriteFile(upPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw}), 0o644)
	code, body := curlVia(t, s, upPEM, "-X", "DELETE", up.URL+"/index.html")
	if code == "200" || !strings.Contains(rawConnect(t, s, strings.TrimPrefix(up.URL, "https://")), "403") {
		t.Fatalf("CONNECT to a narrowed door on a proxy without a CA: %s %q", code, body)
	}
	if got := up.calls(); len(got) != 0 {
		t.Fatalf("the upstream was sent %q", got)
	}
}

func TestCAIsMadeOnceWithAPrivateKey(t *testing.T) {
	dir := t.TempDir()
	a, err := proxy.LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, proxy.CAKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("CA key mode: %v %v, want 0600", fi.Mode(), err)
	}
	b, err := proxy.LoadCA(dir)
	if err != nil || string(a.PEM()) != string(b.PEM()) {
		t.Fatalf("a second load made another CA: %v", err)
	}
	os.Chmod(filepath.Join(dir, proxy.CAKeyFile), 0o644)
	if _, err := proxy.LoadCA(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a readable CA key was used: %v", err)
	}
	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	if err := a.WriteBundle(bundle); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(bundle)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) || !strings.HasSuffix(string(data), string(a.PEM())) || strings.Count(string(data), "BEGIN CERTIFICATE") < 2 {
		t.Fatalf("bundle has %d certificates, want the system's and the CA", strings.Count(string(data), "BEGIN CERTIFICATE"))
	}
}

// The first finding exactly: plain HTTP to a door read-only on
// /index.html, sent through CONNECT (curl -p http://…).
func TestAgentCannotWriteThroughCONNECTToAReadOnlyHTTPDoor(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		io.WriteString(w, "upstream "+r.Method+" "+r.URL.Path)
	}))
	defer up.Close()
	h, p := hostPort(t, up.URL)
	ca, err := proxy.LoadCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, fmt.Sprintf("hosts:\n  - {host: %q, port: %d, access: read-only, paths: [/index.html]}\n", h, p), func(px *proxy.Proxy) { px.CA = ca })
	if code, body := curlVia(t, s, "", up.URL+"/index.html"); code != "200" || body != "upstream GET /index.html" {
		t.Fatalf("GET /index.html through CONNECT: %s %q", code, body)
	}
	for _, args := range [][]string{{"-X", "POST", "-d", "evil", up.URL + "/upload"}, {"-X", "DELETE", up.URL + "/index.html"}, {up.URL + "/admin"}} {
		if code, body := curlVia(t, s, "", args...); code != "403" || !strings.Contains(body, "is not allowed") {
			t.Errorf("%v through CONNECT to a read-only door: %s %q", args, code, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("the upstream was sent %q, want only GET /index.html", seen)
	}
}
