package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/signing"
)

var tokenLineRE = regexp.MustCompile(`^sgn_[A-Z2-7]{16}_[A-Za-z0-9_-]{43}$`)

// useToken closes the gateway the way a person does: the first token (an
// admin one, made from loopback while none exists), then SIGNOFF_TOKEN for
// every later command. It carries every scope so each e2e test's commands
// run as before, now authenticated.
func useToken(t testing.TB) string {
	t.Helper()
	code, out, errs := cli("tokens", "create", "--name", "e2e", "--scopes", "request,check,read:requests,classify,net:request,publish,admin")
	if code != 0 {
		t.Fatalf("tokens create = %d %q %q", code, out, errs)
	}
	tok := lastLine(out)
	t.Setenv("SIGNOFF_TOKEN", tok)
	return tok
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestTokensCreateListRevoke(t *testing.T) {
	gateway(t, demoPersona)
	code, out, errs := cli("tokens", "create", "--name", "ci-agent", "--scopes", "request,check", "--personas", "demo", "--expires", "30d")
	if code != 0 || strings.Count(out, "\n") != 1 || !tokenLineRE.MatchString(lastLine(out)) {
		t.Fatalf("tokens create = %d, stdout %q (want the token alone on one line), stderr %q", code, out, errs)
	}
	tok := lastLine(out)
	if !strings.Contains(errs, "shown this once") {
		t.Errorf("create does not say the token is shown once: %q", errs)
	}
	if strings.Contains(errs, "no persona") {
		t.Errorf("create warns about persona demo, which is loaded: %q", errs)
	}
	// A persona no file defines (a typo): made, with a warning.
	code, out, errs = cli("tokens", "create", "--name", "typo", "--scopes", "request", "--personas", "dmeo")
	if code != 0 || !tokenLineRE.MatchString(lastLine(out)) || !strings.Contains(errs, `⚠ no persona "dmeo" is loaded`) {
		t.Errorf("tokens create for an unknown persona = %d %q %q, want the token and a warning", code, out, errs)
	}
	code, out, _ = cli("tokens", "create", "--name", "ci-json", "--scopes", "read:requests", "--json")
	var j struct{ Name, Token string }
	if code != 0 || json.Unmarshal([]byte(out), &j) != nil || j.Name != "ci-json" || !tokenLineRE.MatchString(j.Token) {
		t.Errorf("--json: %d %q", code, out)
	}

	code, out, _ = cli("tokens")
	if code != 0 || !regexp.MustCompile(`ci-agent\s+request,check\s+demo\s+\S+ \S+\s+never\s+\S+ \S+`).MatchString(out) {
		t.Errorf("tokens list = %d:\n%s", code, out)
	}
	if strings.Contains(out, tok) || strings.Contains(out, tok[21:]) {
		t.Error("the list shows the token")
	}

	// The agent's token files for demo, cannot read the list of tokens
	// (the agent has its token, not the person's key).
	t.Setenv("SIGNOFF_TOKEN", tok)
	t.Setenv("SIGNOFF_KEY", filepath.Join(t.TempDir(), "no-key"))
	if code, _, errs := cli("tokens"); code != 2 || !strings.Contains(errs, `token "ci-agent" lacks scope admin`) {
		t.Errorf("tokens with the agent's token = %d %q", code, errs)
	}
	_, result, rc := startRequest(t, "--persona", "demo", "--timeout", "200ms", "--action", "deploy")
	if c := <-rc; c != 1 {
		t.Errorf("request with the agent's token exited %d (want 1, expired): %v", c, <-result)
	}
}

func TestTokensRevokeEndsItAtOnce(t *testing.T) {
	gateway(t, demoPersona)
	admin := os.Getenv("SIGNOFF_TOKEN")
	_, out, _ := cli("tokens", "create", "--name", "reader", "--scopes", "read:requests")
	reader := lastLine(out)
	t.Setenv("SIGNOFF_TOKEN", reader)
	if code, _, errs := cli("pending"); code != 0 {
		t.Fatalf("pending with reader = %d %q", code, errs)
	}
	t.Setenv("SIGNOFF_TOKEN", admin)
	if code, _, errs := cli("tokens", "revoke", "reader"); code != 0 || !strings.Contains(errs, "revoked") {
		t.Fatalf("revoke = %d %q", code, errs)
	}
	if code, _, errs := cli("tokens", "revoke", "reader"); code != 2 || !strings.Contains(errs, `no token named "reader"`) {
		t.Errorf("second revoke = %d %q", code, errs)
	}
	t.Setenv("SIGNOFF_TOKEN", reader)
	if code, _, errs := cli("pending"); code != 2 || !strings.Contains(errs, "unknown or revoked token") {
		t.Errorf("pending with the revoked token = %d %q", code, errs)
	}
	t.Setenv("SIGNOFF_TOKEN", "")
	if code, _, errs := cli("pending"); code != 2 || !strings.Contains(errs, "requires a token") {
		t.Errorf("pending with no token once tokens exist = %d %q", code, errs)
	}
	// The refusals and token changes are in the audit log, and it still verifies.
	path := filepath.Join(os.Getenv("SIGNOFF_DATA_DIR"), "audit.jsonl")
	raw, _ := os.ReadFile(path)
	for _, want := range []string{`"type":"token"`, `"action":"revoked"`, `"type":"auth"`, `"reason":"unknown or revoked token"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("audit log lacks %s", want)
		}
	}
	if strings.Contains(string(raw), reader) {
		t.Error("the audit log holds a token")
	}
	if code, out, errs := cli("audit", "verify", path); code != 0 {
		t.Errorf("audit verify = %d %q %q", code, out, errs)
	}
}

func TestTokenFileMustBeOwnerOnly(t *testing.T) {
	gateway(t, demoPersona)
	tok := os.Getenv("SIGNOFF_TOKEN")
	t.Setenv("SIGNOFF_TOKEN", "")
	path := filepath.Join(t.TempDir(), "token")
	os.WriteFile(path, []byte(tok+"\n"), 0o644)
	t.Setenv("SIGNOFF_TOKEN_FILE", path)
	if code, _, errs := cli("pending"); code != 2 || !strings.Contains(errs, "readable by others") || !strings.Contains(errs, "chmod 600") {
		t.Errorf("0644 token file: %d %q", code, errs)
	}
	os.Chmod(path, 0o600)
	if code, _, errs := cli("pending"); code != 0 {
		t.Errorf("0600 token file: %d %q", code, errs)
	}
}

// owners is each test's person: one key for every replica it starts.
var owners sync.Map

func ownerKey(t *testing.T) *signing.Key {
	k, _ := owners.LoadOrStore(t.Name(), signing.NewKey())
	return k.(*signing.Key)
}

// serveEnv sets up what serve needs without starting it.
// Its persona's owner is the test's person (ownerKey), whose key file
// SIGNOFF_KEY names: token commands sign with it.
func serveEnv(t *testing.T, listen string) {
	t.Helper()
	dir := t.TempDir()
	personas := filepath.Join(dir, "personas")
	os.MkdirAll(personas, 0o700)
	owner := ownerKey(t)
	os.WriteFile(filepath.Join(personas, "p.yaml"), []byte(strings.ReplaceAll(demoPersona, "OWNER", owner.Npub())), 0o600)
	keyFile := filepath.Join(dir, "owner.key")
	if err := signing.WriteKey(keyFile, owner); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SIGNOFF_KEY", keyFile)
	t.Setenv("SIGNOFF_LISTEN", listen)
	t.Setenv("SIGNOFF_DATA_DIR", filepath.Join(dir, "data"))
	t.Setenv("SIGNOFF_PERSONAS", personas)
	t.Setenv("SIGNOFF_REDIS_URL", "")
	t.Setenv("SIGNOFF_TOKEN", "")
	t.Setenv("SIGNOFF_TOKEN_FILE", "")
	t.Setenv("SIGNOFF_REQUIRE_TOKENS", "")
}

// TestNonLoopbackListenWithoutTokensRefusesToStart: the Dockerfile's
// 0.0.0.0 without SIGNOFF_REQUIRE_TOKENS or an admin token would be an
// open API on the network; serve exits before it listens.
func TestNonLoopbackListenWithoutTokensRefusesToStart(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		t.Run(listen, func(t *testing.T) {
			serveEnv(t, listen)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out, errb syncBuffer
			listened := false
			a := &app{stdout: &out, stderr: &errb, ready: func(string) { listened = true }}
			code := a.run(ctx, []string{"serve"})
			if code != 2 || listened || !strings.Contains(errb.String(), "SIGNOFF_REQUIRE_TOKENS=true") || !strings.Contains(errb.String(), "signoff tokens create --name admin --scopes admin") {
				t.Errorf("serve on %s = %d (listened %v):\n%s", listen, code, listened, errb.String())
			}
		})
	}
}

func TestLoopbackDefaultSaysItIsOpen(t *testing.T) {
	gatewayLogs := startServe(t)
	if !strings.Contains(gatewayLogs.String(), "API open: no token exists") {
		t.Errorf("serve does not say the API is open:\n%s", gatewayLogs)
	}
	if code, _, errs := cli("pending"); code != 0 {
		t.Errorf("pending with no token on the open loopback default = %d %q", code, errs)
	}
}

// TestRequireTokensFirstTokenFromLoopback: SIGNOFF_REQUIRE_TOKENS=true closes
// the API from the start; the first token is made from this machine.
func TestRequireTokensFirstTokenFromLoopback(t *testing.T) {
	logs := startServe(t, "SIGNOFF_REQUIRE_TOKENS", "true")
	if !strings.Contains(logs.String(), "tokens required and none exists yet") {
		t.Errorf("serve does not say how to make the first token:\n%s", logs)
	}
	if code, _, errs := cli("pending"); code != 2 || !strings.Contains(errs, "requires a token") {
		t.Errorf("pending without token = %d %q", code, errs)
	}
	if code, _, errs := cli("tokens", "create", "--name", "agent", "--scopes", "request"); code != 2 || !strings.Contains(errs, "the first token must carry the admin scope") {
		t.Errorf("a first token without admin = %d %q", code, errs)
	}
	code, out, errs := cli("tokens", "create", "--name", "admin", "--scopes", "admin")
	if code != 0 {
		t.Fatalf("first token = %d %q", code, errs)
	}
	keyFile := os.Getenv("SIGNOFF_KEY")
	t.Setenv("SIGNOFF_KEY", filepath.Join(t.TempDir(), "no-key"))
	if code, _, errs := cli("tokens", "create", "--name", "second", "--scopes", "admin"); code != 2 || !strings.Contains(errs, "requires a token") {
		t.Errorf("a second token without a token or the person's key = %d %q", code, errs)
	}
	t.Setenv("SIGNOFF_KEY", keyFile)
	t.Setenv("SIGNOFF_TOKEN", lastLine(out))
	if code, out, errs := cli("tokens"); code != 0 || !strings.Contains(out, "admin") {
		t.Errorf("tokens with the admin token = %d %q %q", code, out, errs)
	}
}

// startServe runs serve on loopback with the given extra variables and
// returns its logs; no token is made.
func startServe(t *testing.T, env ...string) *syncBuffer {
	t.Helper()
	serveEnv(t, "127.0.0.1:0")
	for i := 0; i+1 < len(env); i += 2 {
		t.Setenv(env[i], env[i+1])
	}
	stop, logs := runServe(t)
	t.Cleanup(stop)
	return logs
}

// runServe runs serve in-process on the current environment, points
// SIGNOFF_URL at it, and returns how to stop it and its logs.
func runServe(t *testing.T) (stop func(), logs *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	logs = &syncBuffer{}
	done := make(chan int, 1)
	a := &app{stdout: logs, stderr: logs, ready: func(s string) { addr <- s }}
	go func() { done <- a.run(ctx, []string{"serve"}) }()
	select {
	case s := <-addr:
		t.Setenv("SIGNOFF_URL", "http://"+s)
	case code := <-done:
		cancel()
		t.Fatalf("serve exited %d:\n%s", code, logs)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatalf("serve not listening after 10s:\n%s", logs)
	}
	return func() { cancel(); <-done }, logs
}

// TestEmptiedStoreDoesNotReopenTheAPI: a gateway that had tokens and comes
// back on an empty store (the embedded store after a restart; a Redis
// flushed or restarted without persistence) stays closed: an agent on
// loopback cannot call it without a token, nor mint itself the "first"
// admin token.
func TestEmptiedStoreDoesNotReopenTheAPI(t *testing.T) {
	serveEnv(t, "127.0.0.1:0")
	stop, _ := runServe(t)
	if code, _, errs := cli("tokens", "create", "--name", "me", "--scopes", "admin"); code != 0 {
		t.Fatalf("first token = %d %q", code, errs)
	}
	if code, _, _ := cli("pending"); code != 2 {
		t.Fatalf("pending without a token once one exists = %d, want refused", code)
	}
	stop()
	// The agent deletes the data dir's mark too: the audit chain still
	// says tokens existed.
	if err := os.Remove(filepath.Join(os.Getenv("SIGNOFF_DATA_DIR"), "tokens.closed")); err != nil {
		t.Fatal(err)
	}

	// The embedded store kept nothing: the tokens are gone.
	stop, logs := runServe(t)
	defer stop()
	if !strings.Contains(logs.String(), "TOKENS LOST") {
		t.Errorf("serve does not say the store lost its tokens:\n%s", logs)
	}
	if code, _, errs := cli("pending"); code != 2 || !strings.Contains(errs, "holds none although it had some") {
		t.Errorf("pending without a token on the emptied store = %d %q, want refused", code, errs)
	}
	if status, body := readyz(t); status != 503 || !strings.Contains(body, "TOKENS LOST") {
		t.Errorf("/readyz with the tokens lost = %d %s", status, body)
	}
	keyFile := os.Getenv("SIGNOFF_KEY")
	t.Setenv("SIGNOFF_KEY", filepath.Join(t.TempDir(), "no-key")) // the agent has no key
	if code, out, errs := cli("tokens", "create", "--name", "agent-admin", "--scopes", "admin"); code != 2 {
		t.Errorf("a 'first' admin token minted from loopback on the emptied store = %d %q %q, want refused", code, out, errs)
	}
	// The person restores tokens with their key; the gateway is ready again.
	t.Setenv("SIGNOFF_KEY", keyFile)
	if code, _, errs := cli("tokens", "create", "--name", "me", "--scopes", "admin"); code != 0 {
		t.Fatalf("the person's new token = %d %q", code, errs)
	}
	if status, body := readyz(t); status != 200 {
		t.Errorf("/readyz once the person made a token = %d %s", status, body)
	}
}

// readyz is the gateway's /readyz at SIGNOFF_URL.
func readyz(t *testing.T) (int, string) {
	t.Helper()
	resp, err := http.Get(os.Getenv("SIGNOFF_URL") + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
