package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signoff/signoff/adapters/slack/slackfake"
	"github.com/signoff/signoff/bot"
)

var netIDRE = regexp.MustCompile(`request ([a-z2-7]{16})`)

// netWorld runs serve with a policy file and a boundary, and the proxy.
func netWorld(t *testing.T) (policyFile, proxyAddr string, upstream *httptest.Server) {
	t.Helper()
	dir := t.TempDir()
	example, err := os.ReadFile("../../configs/network/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	policyFile = filepath.Join(dir, "policy.yaml")
	os.WriteFile(policyFile, example, 0o644)
	boundary := filepath.Join(dir, "boundary")
	os.WriteFile(boundary, []byte("# what may ever be opened\n127.0.0.1:*\n*.pythonhosted.org:443\npypi.org:443\n"), 0o644)
	t.Setenv("SIGNOFF_NET_POLICY", policyFile)
	t.Setenv("SIGNOFF_NET_BOUNDARY", boundary)
	gateway(t, demoPersona)

	upstream = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "upstream %s %s", r.Method, r.URL.Path) }))
	t.Cleanup(upstream.Close)

	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	logs := &syncBuffer{}
	done := make(chan int, 1)
	a := &app{stdout: logs, stderr: logs, ready: func(s string) { addr <- s }}
	go func() { done <- a.run(ctx, []string{"proxy", "--listen", "127.0.0.1:0"}) }()
	select {
	case proxyAddr = <-addr:
	case <-time.After(10 * time.Second):
		t.Fatalf("proxy not listening:\n%s", logs)
	}
	t.Cleanup(func() { cancel(); <-done })
	return policyFile, proxyAddr, upstream
}

func viaProxy(t *testing.T, proxyAddr, method, rawURL string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: proxyAddr})}}
	req, _ := http.NewRequest(method, rawURL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s through the proxy: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func mustCLI(t *testing.T, want int, args ...string) string {
	t.Helper()
	code, out, errs := cli(args...)
	if code != want {
		t.Fatalf("signoff %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errs)
	}
	return out + errs
}

func TestNetEndToEnd(t *testing.T) {
	policyFile, proxyAddr, up := netWorld(t)
	u, _ := url.Parse(up.URL)
	port := u.Port()

	// Refused: a draft is filed, and the body says how to ask.
	code, body := viaProxy(t, proxyAddr, "GET", up.URL+"/simple/pkg")
	if code != 403 || !strings.Contains(body, "Draft request") || !strings.Contains(body, "signoff net request --host 127.0.0.1 --port "+port) {
		t.Fatalf("before approval: %d %q", code, body)
	}
	out := mustCLI(t, 0, "net", "requests", "--all")
	if !strings.Contains(out, "drafts:\n") || !strings.Contains(out, "127.0.0.1:"+port) {
		t.Fatalf("net requests --all:\n%s", out)
	}

	out = mustCLI(t, 0, "net", "request", "--host", "127.0.0.1", "--port", port, "--method", "GET", "--path", "/simple/pkg", "--reason", "pip install needs the index")
	id := netIDRE.FindStringSubmatch(out)[1]
	out = mustCLI(t, 0, "net", "requests")
	if !strings.Contains(out, id+"  pending") || !strings.Contains(out, "reason: pip install needs the index") || strings.Contains(out, "drafts:\n") {
		t.Fatalf("net requests:\n%s", out)
	}

	before, _ := os.ReadFile(policyFile)
	out = mustCLI(t, 0, "net", "approve", id[:6], "--save", "--dry-run")
	if !strings.Contains(out, "revision 1 would be revision 2:\n  + 127.0.0.1:"+port+" read-only paths /simple/pkg") ||
		!strings.Contains(out, "+   - host: 127.0.0.1") || !strings.Contains(out, "dry run: nothing was approved or written") {
		t.Fatalf("dry run:\n%s", out)
	}
	if after, _ := os.ReadFile(policyFile); string(after) != string(before) {
		t.Fatal("--dry-run changed the policy file")
	}
	mustCLI(t, 0, "net", "policy") // still revision 1
	if out := mustCLI(t, 0, "net", "policy"); !strings.HasPrefix(out, "revision 1 ") {
		t.Fatalf("after a dry run: %s", out)
	}

	out = mustCLI(t, 0, "net", "approve", id[:6], "--save")
	if !strings.Contains(out, "approved; revision 2 added 127.0.0.1:"+port+" read-only paths /simple/pkg") || !strings.Contains(out, "wrote "+policyFile) {
		t.Fatalf("approve --save:\n%s", out)
	}
	after, _ := os.ReadFile(policyFile)
	for _, keep := range []string{"# Python packages.", "# wheels and sdists", "  - host: 127.0.0.1\n    port: " + port + "\n    access: read-only\n    paths: [/simple/pkg]\n"} {
		if !strings.Contains(string(after), keep) {
			t.Fatalf("saved file lacks %q:\n%s", keep, after)
		}
	}
	// The retry goes through; nothing was restarted.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if code, body = viaProxy(t, proxyAddr, "GET", up.URL+"/simple/pkg"); code == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code != 200 || body != "upstream GET /simple/pkg" {
		t.Fatalf("after approval: %d %q", code, body)
	}
	if code, _ := viaProxy(t, proxyAddr, "POST", up.URL+"/simple/pkg"); code != 403 {
		t.Fatalf("POST through a read-only door: %d", code)
	}
	var l struct {
		Requests []struct {
			ID, Status string
		} `json:"requests"`
		Revision int `json:"revision"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, 0, "net", "requests", "--json")), &l); err != nil || l.Revision != 2 || len(l.Requests) != 1 || l.Requests[0].Status != "approved" {
		t.Fatalf("net requests --json: %+v %v", l, err)
	}
	if out := mustCLI(t, 0, "net", "policy", "--rev", "1"); !strings.HasPrefix(out, "revision 1 — loaded from ") || strings.Contains(out, "127.0.0.1") {
		t.Fatalf("net policy --rev 1:\n%s", out)
	}
	out = mustCLI(t, 0, "net", "policy", "--diff", "2")
	if !strings.Contains(out, "revision 2 — approved request "+id) || !strings.Contains(out, "+ 127.0.0.1:"+port+" read-only paths /simple/pkg") {
		t.Fatalf("net policy --diff 2:\n%s", out)
	}
}

func TestNetApproveChecksEditsFirst(t *testing.T) {
	policyFile, _, _ := netWorld(t)
	out := mustCLI(t, 0, "net", "request", "--host", "files.pythonhosted.org", "--port", "443", "--method", "PUT", "--path", "/up", "--reason", "upload")
	id := netIDRE.FindStringSubmatch(out)[1]
	before, _ := os.ReadFile(policyFile)

	// An edited copy that does not check: nothing sent, request waits.
	bad := filepath.Join(t.TempDir(), "copy.yaml")
	os.WriteFile(bad, []byte("hosts:\n  - host: files.pythonhosted.org\n    port: 443\n    access: write\n"), 0o644)
	out = mustCLI(t, 1, "net", "approve", id, "--policy-from", bad)
	if !strings.Contains(out, "copy.yaml:4:13: access must be read-only or read-write") || !strings.Contains(out, "keeps waiting") {
		t.Fatalf("invalid copy:\n%s", out)
	}
	// --save onto a policy file that has become invalid: refused before any vote.
	os.WriteFile(policyFile, []byte("hosts:\n  - host: pypi.org\n    port: 443\n    acess: read-only\n"), 0o644)
	broken, _ := os.ReadFile(policyFile)
	out = mustCLI(t, 1, "net", "approve", id, "--save")
	if !strings.Contains(out, "policy.yaml:4:5: unknown key \"acess\"") {
		t.Fatalf("--save on a broken file:\n%s", out)
	}
	if now, _ := os.ReadFile(policyFile); string(now) != string(broken) {
		t.Fatal("a failed --save changed the file")
	}
	os.WriteFile(policyFile, before, 0o644)
	if out := mustCLI(t, 0, "net", "requests"); !strings.Contains(out, id+"  pending") {
		t.Fatalf("after failed checks the request is not waiting:\n%s", out)
	}
	// A good copy: it becomes the revision.
	good := filepath.Join(t.TempDir(), "good.yaml")
	os.WriteFile(good, append(before, []byte("  - host: files.pythonhosted.org\n    port: 443\n    access: read-write\n    methods: [PUT]\n")...), 0o644)
	// (a second entry for the same door is refused: widen instead)
	out = mustCLI(t, 1, "net", "approve", id, "--policy-from", good)
	if !strings.Contains(out, "listed twice") {
		t.Fatalf("duplicate entry copy:\n%s", out)
	}
	fixed := strings.Replace(string(before), "access: read-only # wheels and sdists", "access: read-write # wheels and sdists, and our uploads", 1)
	os.WriteFile(good, []byte(fixed), 0o644)
	out = mustCLI(t, 0, "net", "approve", id, "--policy-from", good)
	if !strings.Contains(out, "approved; revision 2 replaced") || !strings.Contains(out, "+ files.pythonhosted.org:443 read-write every method") {
		t.Fatalf("good copy:\n%s", out)
	}
}

func TestNetBoundaryRefusesApprovalFromTheTerminal(t *testing.T) {
	netWorld(t)
	out := mustCLI(t, 0, "net", "request", "--host", "paste.evil.example", "--port", "443", "--reason", "upload results")
	if !strings.Contains(out, "paste.evil.example:443 is outside the network boundary") {
		t.Fatalf("filing outside the boundary:\n%s", out)
	}
	id := netIDRE.FindStringSubmatch(out)[1]
	out = mustCLI(t, 2, "net", "approve", id)
	if !strings.Contains(out, "paste.evil.example:443 is outside the network boundary") {
		t.Fatalf("approve outside the boundary:\n%s", out)
	}
	// The plain `signoff approve` (a signed ✅ like any channel's) cannot approve it either.
	code, o, e := cli("approve", id)
	if !strings.Contains(o, "request "+id+" is pending") {
		t.Fatalf("signoff approve on a deny-only request: %d %s %s", code, o, e)
	}
	if out := mustCLI(t, 0, "net", "requests"); !strings.Contains(out, id+"  pending") {
		t.Fatalf("request not left waiting:\n%s", out)
	}
}

func TestNetDenyReasonReachesTheWaitingAgent(t *testing.T) {
	netWorld(t)
	var out, errb syncBuffer
	code := make(chan int, 1)
	go func() {
		a := &app{stdout: &out, stderr: &errb}
		code <- a.run(context.Background(), []string{"net", "request", "--host", "pypi.org", "--port", "443", "--reason", "everything", "--wait"})
	}()
	var id string
	for deadline := time.Now().Add(10 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := netIDRE.FindStringSubmatch(out.String()); m != nil {
			id = m[1]
		}
	}
	if id == "" {
		t.Fatalf("no id:\n%s%s", out.String(), errb.String())
	}
	mustCLI(t, 2, "net", "deny", id) // no reason: usage error
	o := mustCLI(t, 0, "net", "deny", id[:7], "--reason", "read-only access to pypi.org is already there; ask for GET")
	if !strings.Contains(o, "denied request "+id) {
		t.Fatalf("deny:\n%s", o)
	}
	select {
	case c := <-code:
		if c != 1 || !strings.Contains(out.String(), "reason: read-only access to pypi.org is already there; ask for GET") {
			t.Fatalf("waiting agent: exit %d\n%s\n%s", c, out.String(), errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting agent was not told")
	}
}

func TestNetBadInput(t *testing.T) {
	netWorld(t)
	cases := [][]string{
		{"net", "request", "--host", "a..b", "--port", "443", "--reason", "r"},
		{"net", "request", "--host", "a.com", "--port", "70000", "--reason", "r"},
		{"net", "request", "--host", "a.com", "--port", "443", "--path", "/x", "--reason", "r"},
		{"net", "request", "--host", "a.com", "--port", "443", "--method", "GET", "--path", "/" + strings.Repeat("a", 3000), "--reason", "r"},
		{"net", "request", "--host", "a.com", "--port", "443"},
		{"net", "approve", "zzzz"},
		{"net", "approve"},
		{"net", "policy", "--rev", "99"},
		{"net", "nope"},
	}
	for _, args := range cases {
		if code, o, e := cli(args...); code != 2 || !strings.Contains(e, "signoff") && !strings.Contains(e, "usage") {
			t.Errorf("signoff %s: exit %d\n%s%s", strings.Join(args, " "), code, o, e)
		}
	}
}

// waitMessages waits until request id has a message recorded on p (the
// card was posted and its ref stored, so reactions to it find it).
func waitMessages(t *testing.T, id string, p bot.Platform) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, m := range getRequest(t, id).Messages {
			if m.Platform == p {
				return
			}
		}
	}
	t.Fatalf("no %s message recorded for %s", p, id)
}

// TestSlackReactionOnNetworkRequests: the card says exactly what opens; the
// owner's ✅ in Slack makes the next revision, but not outside the boundary.
func TestSlackReactionOnNetworkRequests(t *testing.T) {
	fake := slackfake.New(t)
	t.Setenv("SIGNOFF_SLACK_BOT_TOKEN", slackfake.BotToken)
	t.Setenv("SIGNOFF_SLACK_APP_TOKEN", slackfake.AppToken)
	t.Setenv("SIGNOFF_SLACK_API_URL", fake.APIURL)
	dir := t.TempDir()
	boundary := filepath.Join(dir, "boundary")
	os.WriteFile(boundary, []byte("pypi.org:443\n"), 0o644)
	t.Setenv("SIGNOFF_NET_BOUNDARY", boundary)
	gateway(t, "name: demo\nowner:\n  name: alice\n  nostr: OWNER\n  slack: U01ALICE\ntimeout: 1m\nchannels:\n  - slack: C0123456\n")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	react := func(evID, ts string) {
		if _, err := fake.Send(ctx, "events_api", slackfake.ReactionEvent(evID, "reaction_added", "U01ALICE", "white_check_mark", "C0123456", ts)); err != nil {
			t.Fatal(err)
		}
	}

	out := mustCLI(t, 0, "net", "request", "--host", "paste.evil.example", "--port", "443", "--reason", "share the logs")
	outside := netIDRE.FindStringSubmatch(out)[1]
	post, err := fake.Next(ctx, "chat.postMessage")
	if err != nil {
		t.Fatal(err)
	}
	card := post.Text + string(post.Blocks)
	if !strings.Contains(card, "paste.evil.example:443: every method on this host and port") || !strings.Contains(card, "outside the network boundary") {
		t.Fatalf("card does not say what opens and that it cannot be approved: %s", card)
	}
	waitMessages(t, outside, bot.Slack)
	react("EvOut", post.TS)

	out = mustCLI(t, 0, "net", "request", "--host", "pypi.org", "--port", "443", "--method", "POST", "--path", "/legacy/", "--reason", "publish")
	inside := netIDRE.FindStringSubmatch(out)[1]
	post2, err := fake.Next(ctx, "chat.postMessage")
	if err != nil {
		t.Fatal(err)
	}
	if card := post2.Text + string(post2.Blocks); !strings.Contains(card, "pypi.org:443: read-write, POST on /legacy/") {
		t.Fatalf("card: %s", card)
	}
	waitMessages(t, inside, bot.Slack)
	react("EvIn", post2.TS)

	deadline := time.Now().Add(10 * time.Second)
	for {
		out = mustCLI(t, 0, "net", "policy")
		if strings.HasPrefix(out, "revision 2 ") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.HasPrefix(out, "revision 2 — approved request "+inside) || !strings.Contains(out, "pypi.org:443 read-write methods POST paths /legacy/") {
		t.Fatalf("after the ✅ in Slack:\n%s", out)
	}
	if r := getRequest(t, outside); r.Status != bot.Pending || len(r.Votes) != 1 {
		t.Fatalf("the ✅ in Slack outside the boundary: %s with votes %+v", r.Status, r.Votes)
	}
	if strings.Contains(out, "paste.evil") {
		t.Fatalf("the boundary was crossed:\n%s", out)
	}
}

// TestProxyHintNamesAnAddressToConnectTo: a proxy listening on every
// address (as in a container) does not tell the agent to connect to
// 0.0.0.0 or [::].
func TestProxyHintNamesAnAddressToConnectTo(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3128}, "HTTPS_PROXY=http://127.0.0.1:3128 HTTP_PROXY=http://127.0.0.1:3128"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 3128}, "HTTPS_PROXY=http://127.0.0.1:3128 HTTP_PROXY=http://127.0.0.1:3128 https_proxy=http://127.0.0.1:3128 http_proxy=http://127.0.0.1:3128 (listening on every address"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 3129}, "HTTPS_PROXY=http://127.0.0.1:3129"},
	} {
		got := proxyHint(tc.addr)
		if !strings.Contains(got, tc.want) || strings.Contains(got, "0.0.0.0") || strings.Contains(got, "[::]") {
			t.Errorf("proxyHint(%s) = %q, want it to hold %q and no wildcard address", tc.addr, got, tc.want)
		}
	}
}

// TestAgentCannotWriteThroughAReadOnlyHTTPSDoorOfSignoffProxy: the real
// `signoff proxy` makes its CA in the data dir (key 0600) and the bundle
// clients name in CURL_CA_BUNDLE; a door a person approved read-only on
// /index.html of an HTTPS upstream refuses POST through CONNECT, and the
// GET is refused too, with the reason, because the upstream's own
// certificate does not verify against the system's roots.
func TestAgentCannotWriteThroughAReadOnlyHTTPSDoorOfSignoffProxy(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is not installed: this test needs it")
	}
	_, proxyAddr, _ := netWorld(t)
	var seen atomic.Int32
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen.Add(1) }))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	out := mustCLI(t, 0, "net", "request", "--host", "127.0.0.1", "--port", u.Port(), "--method", "GET", "--path", "/index.html", "--reason", "read the index")
	if !strings.Contains(out, "HTTPS is inspected") {
		t.Errorf("the request does not say its door is inspected:\n%s", out)
	}
	mustCLI(t, 0, "net", "approve", netIDRE.FindStringSubmatch(out)[1])

	data := os.Getenv("SIGNOFF_DATA_DIR")
	if fi, err := os.Stat(filepath.Join(data, "proxy-ca.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("proxy CA key: %v %v, want mode 0600", fi, err)
	}
	bundle := filepath.Join(data, "proxy-ca-bundle.pem")
	run := func(caBundle string, args ...string) (string, string) {
		cmd := exec.Command(curl, append([]string{"-s", "-S", "-p", "-x", "http://" + proxyAddr, "--noproxy", "", "--max-time", "10", "-w", "\n%{http_code}"}, args...)...)
		cmd.Env = append(os.Environ(), "CURL_CA_BUNDLE="+caBundle, "SSL_CERT_FILE="+caBundle)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			return fmt.Sprintf("exit %d", ee.ExitCode()), stderr.String()
		}
		i := strings.LastIndex(string(b), "\n")
		return string(b)[i+1:], string(b)[:i]
	}
	deadline := time.Now().Add(5 * time.Second)
	var code, body string
	for {
		// The GET reaches the door's inspection and is refused at the
		// upstream: its certificate is httptest's, not a public one.
		if code, body = run(bundle, up.URL+"/index.html"); code == "502" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code != "502" || !strings.Contains(body, "upstream certificate") || !strings.Contains(body, "not valid") {
		t.Fatalf("GET through the inspected door to an upstream with an untrusted certificate: %s %q", code, body)
	}
	for _, m := range []string{"POST", "DELETE", "PUT"} {
		if code, body := run(bundle, "-X", m, up.URL+"/upload"); code != "403" || !strings.Contains(body, m+" https://") {
			t.Errorf("%s through the read-only door: %s %q", m, code, body)
		}
	}
	// A client that does not trust the CA: a TLS failure, not a tunnel.
	if code, body := run("/etc/ssl/certs/ca-certificates.crt", "-X", "POST", up.URL+"/upload"); code != "exit 60" && code != "exit 35" {
		t.Errorf("a client not trusting the proxy CA: %s %q", code, body)
	}
	if n := seen.Load(); n != 0 {
		t.Fatalf("the upstream was sent %d requests", n)
	}
}
