package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/signing"

	"github.com/signoff/signoff/bot/bottest"
)

// syncBuffer is a buffer a command writes to while the test reads it.
type syncBuffer = bottest.Buffer

// gateway runs the real `signoff serve` wiring on a loopback port with a
// persona owned by a fresh key and returns that key's file.
func gateway(t testing.TB, persona string) (ownerKeyFile string) {
	t.Helper()
	return gatewayOn(t, persona, "")
}

// gatewayOn is gateway on the Redis at redisURL ("" for the embedded one).
func gatewayOn(t testing.TB, persona, redisURL string) (ownerKeyFile string) {
	t.Helper()
	return gatewayPersonas(t, redisURL, persona)
}

// gatewayPersonas is gatewayOn with several persona files, OWNER in each
// replaced by the owner key's npub.
func gatewayPersonas(t testing.TB, redisURL string, files ...string) (ownerKeyFile string) {
	t.Helper()
	ownerKeyFile, _ = startGateway(t, redisURL, files...)
	return ownerKeyFile
}

// startGateway is gatewayPersonas returning serve's log too. With no
// files, serve runs on its embedded default: no SIGNOFF_PERSONAS, and a
// HOME (user config dir) with no personas in it, as on a fresh machine.
func startGateway(t testing.TB, redisURL string, files ...string) (ownerKeyFile string, logs *syncBuffer) {
	t.Helper()
	dir := t.TempDir()
	owner := signing.NewKey()
	ownerKeyFile = filepath.Join(dir, "owner.key")
	if err := signing.WriteKey(ownerKeyFile, owner); err != nil {
		t.Fatal(err)
	}
	personas := filepath.Join(dir, "personas")
	os.MkdirAll(personas, 0o700)
	for i, persona := range files {
		persona = strings.ReplaceAll(persona, "OWNER", owner.Npub())
		name := "p.yaml"
		if i > 0 {
			name = fmt.Sprintf("p%d.yaml", i)
		}
		if err := os.WriteFile(filepath.Join(personas, name), []byte(persona), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SIGNOFF_LISTEN", "127.0.0.1:0")
	t.Setenv("SIGNOFF_DATA_DIR", filepath.Join(dir, "data"))
	t.Setenv("SIGNOFF_PERSONAS", personas)
	if len(files) == 0 {
		home := filepath.Join(dir, "home")
		t.Setenv("HOME", home)
		t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
		os.Unsetenv("SIGNOFF_PERSONAS") // restored by t.Setenv's cleanup
	}
	t.Setenv("SIGNOFF_REDIS_URL", redisURL)
	t.Setenv("SIGNOFF_KEY", ownerKeyFile)
	t.Setenv("SIGNOFF_TOKEN", "")
	t.Setenv("SIGNOFF_TOKEN_FILE", "")
	t.Setenv("SIGNOFF_REQUIRE_TOKENS", "")
	// Clients pin the gateway from its data dir; no pin of this machine's.
	t.Setenv("SIGNOFF_GATEWAY_PIN", filepath.Join(dir, "no-pin-file"))
	t.Setenv("SIGNOFF_GATEWAY_KEY", "")

	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	logs = &syncBuffer{}
	done := make(chan int, 1)
	a := &app{stdout: logs, stderr: logs, ready: func(s string) { addr <- s }}
	go func() { done <- a.run(ctx, []string{"serve"}) }()
	select {
	case s := <-addr:
		t.Setenv("SIGNOFF_URL", "http://"+s)
		if len(files) > 0 {
			// Every e2e test runs with tokens on, made by the persona's
			// owner; the embedded example has no owner, so no one can
			// make a token there: its gateway stays open on loopback.
			useToken(t)
		}
	case code := <-done:
		t.Fatalf("serve exited %d:\n%s", code, logs)
	case <-time.After(10 * time.Second):
		t.Fatalf("serve not listening after 10s:\n%s", logs)
	}
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d:\n%s", code, logs)
		} else if t.Failed() {
			t.Logf("serve's log:\n%s", logs)
		}
	})
	return ownerKeyFile, logs
}

// cli runs one signoff command in-process and returns its exit code and output.
func cli(args ...string) (int, string, string) {
	var out, errb syncBuffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
	code := a.run(context.Background(), args)
	return code, out.String(), errb.String()
}

const demoPersona = `name: demo
owner:
  name: alice
  nostr: OWNER
timeout: 1m
`

var idRE = regexp.MustCompile(`request ([a-z2-7]{16})`)

// startRequest runs `signoff request` in the background and returns the
// request id once it is printed.
func startRequest(t *testing.T, args ...string) (id string, result chan [2]string, code chan int) {
	t.Helper()
	var errb syncBuffer
	code = make(chan int, 1)
	result = make(chan [2]string, 1)
	go func() {
		var out syncBuffer
		a := &app{stdout: &out, stderr: &errb}
		c := a.run(context.Background(), append([]string{"request"}, args...))
		result <- [2]string{out.String(), errb.String()}
		code <- c
	}()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := idRE.FindStringSubmatch(errb.String()); m != nil {
			return m[1], result, code
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("request printed no id:\n%s", errb.String())
	return
}

func TestEndToEndApprove(t *testing.T) {
	gateway(t, demoPersona)
	id, result, code := startRequest(t, "--persona", "demo", "--reason", "clean up", "--", "rm", "-rf", "/tmp/scratch")

	c, out, _ := cli("pending")
	if c != 0 || !strings.Contains(out, id) || !strings.Contains(out, "rm -rf /tmp/scratch — clean up") {
		t.Fatalf("pending = %d %q, want it to list %s", c, out, id)
	}
	c, out, errs := cli("approve", id)
	if c != 0 || !strings.Contains(out, "counted") {
		t.Fatalf("approve = %d %q %q, want counted", c, out, errs)
	}
	select {
	case got := <-code:
		res := <-result
		if got != 0 {
			t.Fatalf("request exited %d, want 0 (approved):\n%s", got, res[1])
		}
		if !strings.Contains(res[1], "⛔ approval needed (dangerous): rm -rf /tmp/scratch — clean up") || !strings.Contains(res[1], "✅ approved by alice") {
			t.Errorf("request output lacks the ⛔ line or the outcome:\n%s", res[1])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("request still waiting 10s after approve")
	}

	// A second answer changes nothing.
	c, out, _ = cli("deny", id)
	if c != 1 {
		t.Errorf("deny after approval exited %d (%q), want 1", c, out)
	}
	c, out, _ = cli("audit", "verify", filepath.Join(os.Getenv("SIGNOFF_DATA_DIR"), "audit.jsonl"))
	if c != 0 || !strings.Contains(out, "chain intact") {
		t.Errorf("audit verify = %d %q", c, out)
	}
}

func TestEndToEndDenyAndExpire(t *testing.T) {
	gateway(t, demoPersona)
	id, result, code := startRequest(t, "--persona", "demo", "--action", "deploy v2 to prod")
	if c, out, errs := cli("deny", id); c != 0 {
		t.Fatalf("deny = %d %q %q", c, out, errs)
	}
	if got := <-code; got != 1 {
		t.Fatalf("denied request exited %d, want 1:\n%s", got, (<-result)[1])
	}
	if res := <-result; !strings.Contains(res[1], "❌ denied by alice") {
		t.Errorf("output lacks the outcome:\n%s", res[1])
	}

	_, result, code = startRequest(t, "--persona", "demo", "--timeout", "300ms", "--", "terraform", "destroy")
	if got := <-code; got != 1 {
		t.Fatalf("expired request exited %d, want 1", got)
	}
	if res := <-result; !strings.Contains(res[1], "⌛ expired") || !strings.Contains(res[1], "silence is not consent") {
		t.Errorf("expiry output:\n%s", res[1])
	}
}

func TestEndToEndErrors(t *testing.T) {
	gateway(t, demoPersona)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown persona", []string{"request", "--persona", "nope", "--", "ls"}, 2, `unknown persona "nope"`},
		{"nothing to ask", []string{"request"}, 2, "nothing to ask about"},
		{"unknown request", []string{"approve", "zzzzzzzzzzzzzzzz"}, 2, "unknown request"},
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
		{"approve without id", []string{"approve"}, 2, "takes one request id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := cli(tc.args...)
			if code != tc.code || !strings.Contains(out+errs, tc.want) {
				t.Errorf("signoff %v = %d, %q; want %d and %q", tc.args, code, out+errs, tc.code, tc.want)
			}
		})
	}
	t.Run("gateway unreachable", func(t *testing.T) {
		t.Setenv("SIGNOFF_URL", "http://127.0.0.1:1")
		code, _, errs := cli("request", "--", "ls")
		if code != 2 || !strings.Contains(errs, "cannot reach the gateway") {
			t.Errorf("got %d %q", code, errs)
		}
	})
}
