//go:build unix

package agent_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/signoff/signoff/bot/agent"
)

func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "noexec.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o600)
	for _, tc := range []struct {
		name    string
		argv    []string
		code    int
		stdout  string
		wantErr string
	}{
		{"ok", []string{"echo", "hello", "world"}, 0, "hello world\n", ""},
		{"own code", []string{"sh", "-c", "exit 3"}, 3, "", ""},
		{"argv as given, no shell", []string{"echo", "$HOME", "a;b", "*"}, 0, "$HOME a;b *\n", ""},
		{"stdin passed", []string{"cat"}, 0, "from stdin", ""},
		{"killed by a signal", []string{"sh", "-c", "kill -TERM $$"}, 128 + int(syscall.SIGTERM), "", ""},
		{"not found", []string{"no-such-program-signoff"}, 127, "", "not found"},
		{"not executable", []string{script}, 126, "", "permission denied"},
		{"nothing", nil, 2, "", "no command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code, err := agent.Run(tc.argv, strings.NewReader("from stdin"), &out, &errb)
			if code != tc.code || out.String() != tc.stdout {
				t.Errorf("code %d stdout %q, want %d %q (stderr %q)", code, out.String(), tc.code, tc.stdout, errb.String())
			}
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestRunForwardsSignals(t *testing.T) {
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code, _ := agent.Run([]string{"sh", "-c", "echo ready; exec sleep 10"}, nil, pw, io.Discard, syscall.SIGUSR1)
		pw.Close()
		done <- code
	}()
	buf := make([]byte, 6)
	if _, err := io.ReadFull(pr, buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("child did not start: %q %v", buf, err)
	}
	go io.Copy(io.Discard, pr)
	// The signal reaches this process; Run caught it before starting the
	// child, so the test survives and the child gets it.
	syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	select {
	case code := <-done:
		if code != 128+int(syscall.SIGUSR1) {
			t.Fatalf("exit %d, want %d (killed by the forwarded SIGUSR1)", code, 128+int(syscall.SIGUSR1))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("signal not forwarded: child still running")
	}
}
