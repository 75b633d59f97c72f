package notify

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
)

func request(action string) *bot.Request {
	now := time.Now().UTC()
	return &bot.Request{ID: "01JTEST", Persona: "demo", Kind: bot.KindCommand, Action: action, Reason: "cleanup",
		Status: bot.Pending, Level: bot.Dangerous, CreatedAt: now, Deadline: now.Add(5 * time.Minute)}
}

// TestRunGivesTheRequestOnStdin: the command reads the request and the
// commands that answer it as JSON on stdin.
func TestRunGivesTheRequestOnStdin(t *testing.T) {
	out := filepath.Join(t.TempDir(), "got.json")
	_, err := Run(context.Background(), bot.Notify{Command: []string{"sh", "-c", `cat > "$0"`, out}}, request("rm -rf /tmp/x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("stdin %q: %v", b, err)
	}
	if m.Request == nil || m.Request.ID != "01JTEST" || m.Request.Action != "rm -rf /tmp/x" || m.Approve != "signoff approve 01JTEST" || m.Show != "signoff show 01JTEST" {
		t.Errorf("stdin = %s", b)
	}
}

// TestAgentCannotRunShellThroughNotify: the action is the agent's text; a
// command substitution in it must reach the notify command as data only.
func TestAgentCannotRunShellThroughNotify(t *testing.T) {
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	r := request("echo $(touch " + pwned + ") `touch " + pwned + "`; touch " + pwned)
	_, err := Run(context.Background(), bot.Notify{Command: []string{"sh", "-c", `cat > /dev/null; echo notified`}}, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("the agent's action ran as shell in the notify command")
	}
}

// TestNotifyCommandCannotReadGatewaySecrets: the command gets a small
// environment, none of the gateway's SIGNOFF_* settings (its key, tokens).
func TestNotifyCommandCannotReadGatewaySecrets(t *testing.T) {
	t.Setenv("SIGNOFF_NOSTR_KEY", "nsec1secret")
	t.Setenv("SIGNOFF_SLACK_BOT_TOKEN", "xoxb-secret")
	out, err := Run(context.Background(), bot.Notify{Command: []string{"env"}}, request("ls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "secret") || strings.Contains(out, "SIGNOFF_") {
		t.Errorf("the notify command saw the gateway's settings:\n%s", out)
	}
	if !strings.Contains(out, "PATH=") {
		t.Errorf("no PATH for the notify command:\n%s", out)
	}
}

// TestRunKillsAHungCommandAtItsLimit: the whole process group goes, a
// child that holds the output open included.
func TestRunKillsAHungCommandAtItsLimit(t *testing.T) {
	start := time.Now()
	_, err := Run(context.Background(), bot.Notify{Command: []string{"sh", "-c", "sleep 30 & sleep 30"}, Timeout: 300 * time.Millisecond}, request("ls"), nil)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s to end a command limited to 300ms", took)
	}
}

func TestRunReportsAFailingCommand(t *testing.T) {
	out, err := Run(context.Background(), bot.Notify{Command: []string{"sh", "-c", "echo no route >&2; exit 7"}}, request("ls"), nil)
	if err == nil || !strings.Contains(err.Error(), "exit status 7") || out != "no route" {
		t.Errorf("err = %v, out = %q", err, out)
	}
	if _, err := Run(context.Background(), bot.Notify{Command: []string{"/nonexistent/notifier"}}, request("ls"), nil); err == nil {
		t.Error("a missing program was not an error")
	}
}

// TestRunnerRunsEachNewRequest: Notify returns at once; Close waits.
func TestRunnerRunsEachNewRequest(t *testing.T) {
	dir := t.TempDir()
	p := bot.Persona{Name: "demo", Notify: &bot.Notify{Command: []string{"sh", "-c", `cat > "$0/$$.json"`, dir}}}
	n := &Runner{}
	for range 3 {
		n.Notify(request("ls"), p)
	}
	n.Notify(request("ls"), bot.Persona{Name: "quiet"}) // no notify: nothing
	n.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 3 {
		t.Errorf("ran %d times, want 3", len(files))
	}
}

func TestWatchSaysWhatIsNewAndWhatWent(t *testing.T) {
	var w Watch
	a, b, c := bot.Request{ID: "a"}, bot.Request{ID: "b"}, bot.Request{ID: "c"}
	steps := []struct {
		now         []bot.Request
		added, gone string
	}{
		{[]bot.Request{a, b}, "a b", ""},
		{[]bot.Request{a, b}, "", ""},
		{[]bot.Request{b, c}, "c", "a"},
		{nil, "", "b c"},
	}
	for i, s := range steps {
		added, gone := w.Look(s.now)
		var ids []string
		for _, r := range added {
			ids = append(ids, r.ID)
		}
		if got := strings.Join(ids, " "); got != s.added {
			t.Errorf("step %d: added %q, want %q", i, got, s.added)
		}
		if got := strings.Join(gone, " "); got != s.gone {
			t.Errorf("step %d: gone %q, want %q", i, got, s.gone)
		}
	}
}

// TestStoreWriterCannotChooseTheNotifyCommand: a persona as the store
// holds it (JSON) carries no notify command, so whoever can write Redis
// cannot make the gateway run one.
func TestStoreWriterCannotChooseTheNotifyCommand(t *testing.T) {
	var p bot.Persona
	if err := json.Unmarshal([]byte(`{"name":"demo","notify":{"command":["sh","-c","touch /tmp/pwned"]}}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Notify != nil {
		t.Fatalf("a stored persona chose the notify command %v", p.Notify.Command)
	}
	b, _ := json.Marshal(bot.Persona{Name: "demo", Notify: &bot.Notify{Command: []string{"true"}}})
	if strings.Contains(string(b), "notify") {
		t.Errorf("the notify command is stored: %s", b)
	}
}
