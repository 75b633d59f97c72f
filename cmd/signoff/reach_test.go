package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeRefusesPersonaWithNoReachableChannel: a persona whose only
// channel is Slack, with no Slack credentials here, stops serve with a
// message naming it; personas check says the same.
func TestServeRefusesPersonaWithNoReachableChannel(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ops.yaml"), []byte("name: ops\nowner:\n  name: alice\n  slack: U01ALICE\nchannels:\n  - slack: C0123456\n"), 0o600)
	t.Setenv("SIGNOFF_PERSONAS", dir)
	t.Setenv("SIGNOFF_LISTEN", "127.0.0.1:0")
	t.Setenv("SIGNOFF_DATA_DIR", filepath.Join(dir, "data"))
	t.Setenv("SIGNOFF_REDIS_URL", "")
	t.Setenv("SIGNOFF_SLACK_BOT_TOKEN", "")
	t.Setenv("SIGNOFF_SLACK_APP_TOKEN", "")
	t.Setenv("SIGNOFF_SLACK_SIGNING_SECRET", "")

	code, out, errs := cli("personas", "check", dir)
	if code != 1 || !strings.Contains(errs, "channel slack C0123456: no SIGNOFF_SLACK_BOT_TOKEN") || !strings.Contains(errs, "persona ops: none of its channels") {
		t.Errorf("personas check = %d %q %q", code, out, errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var logs syncBuffer
	a := &app{stdout: &logs, stderr: &logs, ready: func(string) { t.Error("serve started") }}
	if code := a.run(ctx, []string{"serve"}); code != 2 || !strings.Contains(logs.String(), "persona ops: none of its channels can be posted to here") {
		t.Errorf("serve = %d:\n%s", code, logs.String())
	}
}

// TestServeStartsWhenOneChannelWorks: with another channel
// that works (the terminal), serve starts (warning about Discord).
func TestServeStartsWhenOneChannelWorks(t *testing.T) {
	t.Setenv("SIGNOFF_DISCORD_BOT_TOKEN", "")
	gateway(t, demoPersona+"channels:\n  - discord: \"998877665544332211\"\n  - terminal: true\n")
}
