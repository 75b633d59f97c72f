package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/signoff/signoff/signing"
)

// ptyApp runs one signoff command in-process with its stderr on a
// pseudo-terminal, and returns what the terminal shows as it arrives.
func ptyApp(t *testing.T, args ...string) (screen func() string, code chan int, cancel context.CancelFunc) {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close(); slave.Close() })
	var (
		mu  sync.Mutex
		buf bytes.Buffer
	)
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			mu.Lock()
			buf.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	code = make(chan int, 1)
	var out syncBuffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: slave}
	go func() { code <- a.run(ctx, args) }()
	t.Cleanup(cancel)
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}, code, cancel
}

var leftRE = regexp.MustCompile(`\r\x1b\[Kwaiting: [^\r]*· (\d+m)?(\d+)s left`)

// countdowns returns the distinct countdown values the terminal showed.
func countdowns(s string) []string {
	var out []string
	for _, m := range leftRE.FindAllStringSubmatch(s, -1) {
		v := m[1] + m[2] + "s"
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

func waitFor(t *testing.T, within time.Duration, what string, screen func() string, ok func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if ok(screen()) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s not shown within %s; the terminal shows:\n%q", what, within, screen())
}

// TestLiveWaitOnATerminal: the countdown moves every second, rewritten in
// place, and a vote appears within a second of being counted, with the
// quorum arithmetic.
func TestLiveWaitOnATerminal(t *testing.T) {
	bobKey, bobNpub := keyFile(t)
	_, carolNpub := keyFile(t)
	persona := `name: team
owner:
  name: alice
  nostr: OWNER
members:
  - name: bob
    nostr: BOB
  - name: carol
    nostr: CAROL
approvalQuorum: 2
timeout: 1m
`
	gateway(t, strings.NewReplacer("BOB", bobNpub, "CAROL", carolNpub).Replace(persona))
	screen, code, _ := ptyApp(t, "request", "--persona", "team", "--", "rm", "-rf", "/tmp/x")
	waitFor(t, 10*time.Second, "the waiting line", screen, func(s string) bool { return len(countdowns(s)) >= 1 })
	waitFor(t, 3*time.Second, "a moving countdown", screen, func(s string) bool { return len(countdowns(s)) >= 3 })
	if s := screen(); !strings.Contains(s, "needs the owner (alice), or 2 more of: bob, carol") {
		t.Errorf("the line does not say who may still answer:\n%q", s)
	}
	id := awaitPending(t).ID
	if c, out, errs := cli("approve", "--key", bobKey, id); c != 0 {
		t.Fatalf("bob's approve: %d %s %s", c, out, errs)
	}
	voted := time.Now()
	waitFor(t, time.Second, "bob's vote", screen, func(s string) bool {
		return strings.Contains(s, "1 vote (bob approve) · needs the owner (alice), or 1 more of: carol")
	})
	t.Logf("bob's vote shown %s after it was counted", time.Since(voted).Round(time.Millisecond))
	if c, _, errs := cli("approve", id); c != 0 { // alice, the owner ($SIGNOFF_KEY)
		t.Fatalf("alice's approve: %d %s", c, errs)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("request exited %d:\n%q", c, screen())
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("request did not end after the owner approved:\n%q", screen())
	}
	waitFor(t, 2*time.Second, "the outcome in place of the waiting line", screen, func(s string) bool {
		return strings.Contains(s, "\r\x1b[K✅ approved by alice")
	})
}

// TestWaitWithoutTerminalPrintsPlainLines: no escape codes in a log, and a
// line when a vote arrives.
func TestWaitWithoutTerminalPrintsPlainLines(t *testing.T) {
	gateway(t, demoPersona)
	id, result, code := startRequest(t, "--", "rm", "-rf", "/tmp/x")
	if c, _, errs := cli("approve", id); c != 0 {
		t.Fatalf("approve: %d %s", c, errs)
	}
	if c := <-code; c != 0 {
		t.Fatalf("request exited %d", c)
	}
	errs := (<-result)[1]
	if strings.Contains(errs, "\x1b") || strings.Contains(errs, "\r") {
		t.Errorf("plain output carries terminal codes:\n%q", errs)
	}
	if !strings.Contains(errs, "waiting: 0 votes · needs the owner (alice) · ") {
		t.Errorf("no plain waiting line:\n%s", errs)
	}
}

// keyFile writes a fresh person's key and returns its file and npub.
func keyFile(t *testing.T) (path, npub string) {
	t.Helper()
	k := signing.NewKey()
	path = filepath.Join(t.TempDir(), "key")
	if err := signing.WriteKey(path, k); err != nil {
		t.Fatal(err)
	}
	return path, k.Npub()
}
