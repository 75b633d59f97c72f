package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

const riskyManifest = `{"name":"release-bot","description":"publishes releases","scopes":["request","publish","admin"],"network":["*:443","api.github.com:443"],"personas":["demo"]}`

func writeManifest(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "signoff.json")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func tokenNames(t *testing.T) string {
	t.Helper()
	code, out, errs := cli("tokens")
	if code != 0 {
		t.Fatalf("tokens = %d %q", code, errs)
	}
	return out
}

// TestExtInstallWithoutTerminalOrYesRefuses: a script (or an agent) piping
// into `ext install` cannot say yes for the person: no TTY, no --yes, no token.
func TestExtInstallWithoutTerminalOrYesRefuses(t *testing.T) {
	gateway(t, demoPersona)
	path := writeManifest(t, riskyManifest)
	var out, errb syncBuffer
	a := &app{stdin: strings.NewReader("yes\n"), stdout: &out, stderr: &errb}
	code := a.run(context.Background(), []string{"ext", "install", path})
	if code != 2 || !strings.Contains(errb.String(), "no terminal to ask on") || out.String() != "" {
		t.Errorf("ext install piped 'yes' = %d, stdout %q, stderr:\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "⚠ admin") {
		t.Errorf("the consent block was not shown:\n%s", errb.String())
	}
	if strings.Contains(tokenNames(t), "release-bot") {
		t.Error("a token was created without consent")
	}
}

func TestExtInstallYesListRemove(t *testing.T) {
	gateway(t, demoPersona)
	path := writeManifest(t, riskyManifest)
	code, out, errs := cli("ext", "install", path, "--yes")
	if code != 0 || strings.Count(out, "\n") != 1 || !tokenLineRE.MatchString(lastLine(out)) {
		t.Fatalf("ext install --yes = %d, stdout %q, stderr %q", code, out, errs)
	}
	want, _ := os.ReadFile("../../bot/tokens/testdata/consent-ext.golden")
	if !strings.HasPrefix(errs, string(want)) || len(want) == 0 {
		t.Errorf("consent block:\n%s\nwant (bot/tokens/testdata/consent-ext.golden):\n%s", errs, want)
	}
	tok := lastLine(out)
	code, out, _ = cli("ext", "list")
	if code != 0 || !strings.Contains(out, "release-bot") || !strings.Contains(out, "*:443,api.github.com:443") || !strings.Contains(out, "request,publish,admin") {
		t.Errorf("ext list = %d:\n%s", code, out)
	}
	// Its token is pinned to demo.
	t.Setenv("SIGNOFF_TOKEN", tok)
	if code, _, errs := cli("request", "--persona", "other", "--", "ls"); code != 2 || !strings.Contains(errs, `may act only for persona demo`) {
		t.Errorf("extension filing for another persona = %d %q", code, errs)
	}
	code, _, errs = cli("ext", "remove", "release-bot")
	if code != 0 {
		t.Fatalf("ext remove = %d %q", code, errs)
	}
	if code, _, errs := cli("pending"); code != 2 || !strings.Contains(errs, "unknown or revoked token") {
		t.Errorf("the removed extension's token still works: %d %q", code, errs)
	}
}

func TestExtInstallAsksOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		answer  string
		code    int
		created bool
	}{{"yes", 0, true}, {"no", 1, false}, {"y", 1, false}} {
		t.Run(tc.answer, func(t *testing.T) {
			gateway(t, demoPersona)
			path := writeManifest(t, `{"name":"reader"}`)
			master, tty, err := pty.Open()
			if err != nil {
				t.Skipf("no pseudo-terminal: %v", err)
			}
			defer master.Close()
			defer tty.Close()
			var mu sync.Mutex
			var screen bytes.Buffer
			go func() {
				b := make([]byte, 4096)
				for {
					n, err := master.Read(b)
					mu.Lock()
					screen.Write(b[:n])
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
			var out syncBuffer
			done := make(chan int, 1)
			a := &app{stdin: tty, stdout: &out, stderr: tty}
			go func() { done <- a.run(context.Background(), []string{"ext", "install", path}) }()
			deadline := time.Now().Add(10 * time.Second)
			for {
				mu.Lock()
				s := screen.String()
				mu.Unlock()
				if strings.Contains(s, "Type yes to create its token: ") {
					if !strings.Contains(s, "read:requests") {
						t.Errorf("a manifest declaring nothing should ask for read:requests only:\n%s", s)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no prompt on the terminal:\n%s", s)
				}
				time.Sleep(10 * time.Millisecond)
			}
			master.Write([]byte(tc.answer + "\n"))
			var code int
			select {
			case code = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("ext install still waiting after the answer")
			}
			if code != tc.code || tokenLineRE.MatchString(lastLine(out.String())) != tc.created {
				t.Errorf("answer %q: exit %d, stdout %q", tc.answer, code, out.String())
			}
			if got := strings.Contains(tokenNames(t), "reader"); got != tc.created {
				t.Errorf("answer %q: token created = %v", tc.answer, got)
			}
		})
	}
}

func TestExtInstallRejectsBadManifests(t *testing.T) {
	gateway(t, demoPersona)
	for name, body := range map[string]string{
		"misspelt field": `{"name":"x","scope":["admin"]}`,
		"escape codes":   `{"name":"x","description":"\u001b[2K\u001b[1Aall read-only"}`,
		"unknown scope":  `{"name":"x","scopes":["vote"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errs := cli("ext", "install", writeManifest(t, body), "--yes")
			if code != 2 || out != "" || !strings.Contains(errs, "signoff.json") {
				t.Errorf("= %d %q %q", code, out, errs)
			}
		})
	}
	if code, _, errs := cli("ext", "install", "/nonexistent/signoff.json", "--yes"); code != 2 || !strings.Contains(errs, "no such file") {
		t.Errorf("missing manifest = %d %q", code, errs)
	}
	if strings.Count(tokenNames(t), "\n") != 2 { // header + the e2e token
		t.Errorf("bad manifests created tokens:\n%s", tokenNames(t))
	}
}
