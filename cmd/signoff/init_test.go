package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// freshUser is the environment of a new user: an empty HOME, no SIGNOFF_*
// settings, working in an empty directory.
func freshUser(t *testing.T) (env []string, home, work string) {
	t.Helper()
	home, work = t.TempDir(), t.TempDir()
	env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "USER=alice", "TMPDIR=" + os.TempDir()}
	return env, home, work
}

func run(t *testing.T, bin string, env []string, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Dir = env, dir
	var o, e syncBuffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), o.String(), e.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, o.String(), e.String()
}

// TestInitThenWalkthrough: on an empty HOME, `signoff init` writes a 0600
// key and a persona owned by the user, prints the agent configuration with
// the binary's absolute path and the next command; run again it keeps
// everything. Then the walkthrough as a person does it: serve, request,
// pending, approve.
func TestInitThenWalkthrough(t *testing.T) {
	bin := signoffBinary(t)
	env, home, work := freshUser(t)
	start := time.Now()

	code, out, errs := run(t, bin, env, work, "init")
	if code != 0 {
		t.Fatalf("init = %d\n%s%s", code, out, errs)
	}
	t.Logf("$ signoff init\n%s", out)
	keyPath := filepath.Join(home, ".config", "signoff", "key")
	st, err := os.Stat(keyPath)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key %s: %v %v", keyPath, st, err)
	}
	key1, _ := os.ReadFile(keyPath)
	personaPath := filepath.Join(home, ".config", "signoff", "personas", "demo.yaml")
	persona, err := os.ReadFile(personaPath)
	if err != nil || !strings.Contains(string(persona), "name: alice") {
		t.Fatalf("persona %s: %s %v", personaPath, persona, err)
	}
	for _, want := range []string{
		`"command": "` + bin + ` hook claude-code --persona demo"`,
		`"onFailure": "block"`,
		bin + " hook codex --persona demo",
		`"command": "` + bin + `", "args": ["mcp", "--persona", "demo"]`,
		"Next: start the gateway",
		bin + " serve",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("init output lacks %q", want)
		}
	}
	_, npub, _ := run(t, bin, env, work, "keygen", "--show")
	if npub = strings.TrimSpace(npub); !strings.HasPrefix(npub, "npub1") || !strings.Contains(string(persona), npub) || !strings.Contains(out, npub) {
		t.Errorf("keygen --show = %q; the persona and init name it too", npub)
	}

	code, again, _ := run(t, bin, env, work, "init")
	key2, _ := os.ReadFile(keyPath)
	persona2, _ := os.ReadFile(personaPath)
	if code != 0 || string(key1) != string(key2) || string(persona) != string(persona2) ||
		!strings.Contains(again, "already at "+keyPath+" (kept)") || !strings.Contains(again, "with you as owner (kept)") {
		t.Errorf("second init = %d, changed something or did not say so:\n%s", code, again)
	}

	// The walkthrough: serve reads the persona init wrote.
	serve := exec.Command(bin, "serve")
	serve.Env, serve.Dir = append(env, "SIGNOFF_LISTEN=127.0.0.1:0"), work
	pr, pw, _ := os.Pipe()
	serve.Stderr, serve.Stdout = pw, pw
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer func() { serve.Process.Signal(os.Interrupt); serve.Wait() }()
	addrRE := regexp.MustCompile(`listening"? addr=(127\.0\.0\.1:\d+)`)
	var serveLog syncBuffer
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			serveLog.Write([]byte(sc.Text() + "\n"))
			if m := addrRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	var addr string
	select {
	case addr = <-found:
	case <-time.After(15 * time.Second):
		t.Fatalf("serve not listening after 15s:\n%s", serveLog.String())
	}
	if addr == "" || !strings.Contains(serveLog.String(), filepath.Join(home, ".config", "signoff", "personas")) || !strings.Contains(serveLog.String(), "owner=alice") {
		t.Fatalf("serve did not load init's persona:\n%s", serveLog.String())
	}
	env = append(env, "SIGNOFF_URL=http://"+addr)
	req := exec.Command(bin, "request", "--", "rm", "-rf", "/tmp/signoff-try")
	req.Env, req.Dir = env, work
	var reqErr syncBuffer
	req.Stderr = &reqErr
	if err := req.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the request's id", reqErr.String, func(s string) bool { return idRE.MatchString(s) })
	id := idRE.FindStringSubmatch(reqErr.String())[1]
	_, pending, _ := run(t, bin, env, work, "pending")
	if !strings.Contains(pending, id) {
		t.Errorf("pending does not list %s:\n%s", id, pending)
	}
	code, approved, aerr := run(t, bin, env, work, "approve", id)
	if code != 0 {
		t.Fatalf("approve = %d %s %s", code, approved, aerr)
	}
	if err := req.Wait(); err != nil {
		t.Fatalf("request: %v\n%s", err, reqErr.String())
	}
	if !strings.Contains(reqErr.String(), "✅ approved by alice") {
		t.Errorf("request says:\n%s", reqErr.String())
	}
	// The agent on this machine cannot mint the first token without a
	// key (curl -X POST 127.0.0.1:PORT/v1/tokens); the person closes the
	// API with one made with the key init wrote, found without a flag.
	res, err := http.Post("http://"+addr+"/v1/tokens", "application/json", strings.NewReader(`{"name":"agent","scopes":["admin"]}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a tokenless first token from loopback = %d, want 401", res.StatusCode)
	}
	code, tok, terr := run(t, bin, env, work, "tokens", "create", "--name", "me", "--scopes", "admin")
	if code != 0 || !strings.HasPrefix(lastLine(tok), "sgn_") {
		t.Fatalf("tokens create with init's key = %d %s %s", code, tok, terr)
	}
	if code, _, perr := run(t, bin, env, work, "pending"); code != 2 || !strings.Contains(perr, "requires a token") {
		t.Errorf("pending without a token once the person made one = %d %s", code, perr)
	}
	t.Logf("$ signoff serve\n%s", serveLog.String())
	t.Logf("$ signoff request -- rm -rf /tmp/signoff-try\n%s", reqErr.String())
	t.Logf("$ signoff pending\n%s", pending)
	t.Logf("$ signoff approve %s\n%s%s", id, aerr, approved)
	t.Logf("init to first approval: %s (machine time, commands run back to back)", time.Since(start).Round(time.Millisecond))
}
