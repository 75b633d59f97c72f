package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
)

// cliIn runs one signoff command in-process with stdin.
func cliIn(stdin io.Reader, args ...string) (int, string, string) {
	var out, errb syncBuffer
	a := &app{stdin: stdin, stdout: &out, stderr: &errb}
	code := a.run(context.Background(), args)
	return code, out.String(), errb.String()
}

type result struct {
	code        int
	stdout, err string
}

// background runs a command in-process and delivers its result.
func background(stdin io.Reader, args ...string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		code, out, errs := cliIn(stdin, args...)
		ch <- result{code, out, errs}
	}()
	return ch
}

// awaitPending returns the one request the gateway at $SIGNOFF_URL has
// waiting, once there is one.
func awaitPending(t *testing.T) *bot.Request {
	t.Helper()
	c := httpapi.NewClient(os.Getenv("SIGNOFF_URL"))
	c.Token = os.Getenv("SIGNOFF_TOKEN")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		rs, err := c.List(context.Background(), bot.Filter{Status: bot.Pending})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 1 {
			return rs[0]
		}
		if len(rs) > 1 {
			t.Fatalf("%d pending requests, want 1", len(rs))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no request reached the gateway in 10s")
	return nil
}

// awaitNonePending waits until no request is pending, so a case that gave
// up waiting (its request still expiring) does not leak into the next.
func awaitNonePending(t *testing.T) {
	t.Helper()
	c := httpapi.NewClient(os.Getenv("SIGNOFF_URL"))
	c.Token = os.Getenv("SIGNOFF_TOKEN")
	deadline := time.Now().Add(10 * time.Second)
	for {
		rs, err := c.List(context.Background(), bot.Filter{Status: bot.Pending})
		if err == nil && len(rs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still pending after 10s (%v)", len(rs), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func finished(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(15 * time.Second):
		t.Fatal("command still running after 15s")
	}
	return result{}
}

func TestExecSafeAndCautionRunAtOnce(t *testing.T) {
	gateway(t, demoPersona)
	dir := t.TempDir()
	code, out, errs := cli("exec", "--", "echo", "hello", "$HOME")
	if code != 0 || out != "hello $HOME\n" || errs != "" {
		t.Errorf("safe: %d %q %q, want 0 and the output as given", code, out, errs)
	}
	made := filepath.Join(dir, "made")
	code, _, errs = cli("exec", "--", "mkdir", made)
	if code != 0 || !strings.Contains(errs, "signoff: caution: ") || !strings.Contains(errs, "audited") {
		t.Errorf("caution: %d %q, want 0 and a caution line", code, errs)
	}
	if _, err := os.Stat(made); err != nil {
		t.Errorf("caution command did not run: %v", err)
	}
	code, out, _ = cliIn(strings.NewReader("piped in"), "exec", "--", "cat")
	if code != 0 || out != "piped in" {
		t.Errorf("stdin: %d %q", code, out)
	}
}

func TestExecExitCodes(t *testing.T) {
	gateway(t, demoPersona)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"own code", []string{"exec", "--", "sh", "-c", "exit 7"}, 7, ""},
		{"not found", []string{"exec", "--", "no-such-program-signoff"}, 127, "not found"},
		{"nothing to run", []string{"exec"}, 2, "nothing to run"},
		{"bad flag", []string{"exec", "--frob", "--", "ls"}, 2, "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := cli(tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Errorf("%v = %d %q, want %d %q", tc.args, code, errs, tc.code, tc.want)
			}
		})
	}
}

// TestExecDangerous asks a real gateway: the command runs only when
// approved. It would create a file, so a file that is not there proves
// it did not run.
func TestExecDangerous(t *testing.T) {
	gateway(t, demoPersona)
	marker := func(t *testing.T) (string, []string) {
		f := filepath.Join(t.TempDir(), "ran")
		// eval cannot be seen through, so this is dangerous; run, it
		// makes the file and exits 3.
		return f, []string{"exec", "--reason", "test", "--", "sh", "-c", `eval "touch ` + f + `"; exit 3`}
	}
	t.Run("denied", func(t *testing.T) {
		f, args := marker(t)
		done := background(nil, args...)
		r := awaitPending(t)
		if r.Kind != bot.KindCommand || r.Level != bot.Dangerous || !strings.HasPrefix(r.Action, "sh -c ") || r.Reason != "test" {
			t.Errorf("request = %s %q %s %q", r.Kind, r.Action, r.Level, r.Reason)
		}
		if c, out, errs := cli("deny", r.ID); c != 0 {
			t.Fatalf("deny = %d %q %q", c, out, errs)
		}
		res := finished(t, done)
		if res.code != 1 || !strings.Contains(res.err, "❌ denied by alice") {
			t.Errorf("exec = %d %q, want 1 and the outcome", res.code, res.err)
		}
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("the denied command ran (%s exists)", f)
		}
	})
	t.Run("approved", func(t *testing.T) {
		f, args := marker(t)
		done := background(nil, args...)
		r := awaitPending(t)
		if c, out, errs := cli("approve", r.ID); c != 0 {
			t.Fatalf("approve = %d %q %q", c, out, errs)
		}
		res := finished(t, done)
		if res.code != 3 || !strings.Contains(res.err, "✅ approved by alice") {
			t.Errorf("exec = %d %q, want the command's 3 and the outcome", res.code, res.err)
		}
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the approved command did not run: %v", err)
		}
	})
	t.Run("expired", func(t *testing.T) {
		f, args := marker(t)
		args = append([]string{"exec", "--timeout", "300ms"}, args[1:]...)
		res := finished(t, background(nil, args...))
		if res.code != 1 || !strings.Contains(res.err, "⌛ expired") {
			t.Errorf("exec = %d %q, want 1, expired", res.code, res.err)
		}
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Error("the expired command ran")
		}
	})
	t.Run("unknown persona", func(t *testing.T) {
		f, args := marker(t)
		args = append([]string{"exec", "--persona", "nope"}, args[1:]...)
		res := finished(t, background(nil, args...))
		if res.code != 2 || !strings.Contains(res.err, `unknown persona "nope"`) {
			t.Errorf("exec = %d %q, want 2", res.code, res.err)
		}
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Error("the command ran though the request failed")
		}
	})
	t.Run("gateway unreachable", func(t *testing.T) {
		t.Setenv("SIGNOFF_URL", "http://127.0.0.1:1")
		f, args := marker(t)
		res := finished(t, background(nil, args...))
		if res.code != 2 || !strings.Contains(res.err, "cannot reach the gateway") {
			t.Errorf("exec = %d %q, want 2", res.code, res.err)
		}
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Error("the command ran without a gateway")
		}
	})
}

// TestExecCautionIsLogged: a caution command runs at once and leaves a
// check record (resolved by caution) in the gateway's audit log.
func TestExecCautionIsLogged(t *testing.T) {
	gateway(t, demoPersona)
	made := filepath.Join(t.TempDir(), "made")
	code, _, errs := cli("exec", "--", "mkdir", made)
	if code != 0 || !strings.Contains(errs, "running without asking (audited)") {
		t.Fatalf("caution: %d %q, want 0 and a logged caution line", code, errs)
	}
	if _, err := os.Stat(made); err != nil {
		t.Errorf("caution command did not run: %v", err)
	}
	audit, err := os.ReadFile(filepath.Join(os.Getenv("SIGNOFF_DATA_DIR"), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(audit), `"type":"check"`) || !strings.Contains(string(audit), `"by":"caution"`) || !strings.Contains(string(audit), "mkdir") {
		t.Errorf("audit log has no check record resolved by caution for mkdir:\n%s", audit)
	}
}
