package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/signoff/signoff/adapters/slack/slackfake"
	"github.com/signoff/signoff/bot"
)

// TestRateLimitedPublishWaitsAndPostsOnce: an agent publishes past its
// persona's burst from the CLI. The gateway answers 429 before posting
// anything; `signoff publish` says on stderr that it is rate limited and
// when it tries again, then succeeds, and the message is posted once. The
// gateway counted the 429 (/metrics) and logged it.
func TestRateLimitedPublishWaitsAndPostsOnce(t *testing.T) {
	sl := slackfake.New(t)
	t.Setenv("SIGNOFF_SLACK_BOT_TOKEN", slackfake.BotToken)
	t.Setenv("SIGNOFF_SLACK_APP_TOKEN", slackfake.AppToken)
	t.Setenv("SIGNOFF_SLACK_API_URL", sl.APIURL)
	_, logs := startGateway(t, "", demoPersona+"channels:\n  - slack: C0123456\n")
	tok := os.Getenv("SIGNOFF_TOKEN")
	for i := range bot.PublishBurst {
		if code, body := postPublish(t, tok, map[string]string{"persona": "demo", "text": fmt.Sprintf("message %d", i)}); code != http.StatusOK {
			t.Fatalf("publish %d of the burst = %d %s", i, code, body)
		}
	}
	code, out, errs := cli("publish", "--persona", "demo", "after", "the", "wait")
	if code != 0 || !strings.Contains(out, "posted on slack C0123456") {
		t.Fatalf("signoff publish past the burst = %d %q %q, want it posted after a wait", code, out, errs)
	}
	waits := 0
	for _, line := range strings.Split(errs, "\n") {
		if strings.HasPrefix(line, "signoff: the gateway is rate limiting this client (persona demo published 10 messages lately") &&
			strings.Contains(line, "; trying again in ") {
			waits++
		}
	}
	if waits != 1 {
		t.Errorf("stderr:\n%s\nwant one line saying the gateway rate limits this client and when it tries again", errs)
	}
	n := 0
	for _, m := range sl.Pending("chat.postMessage") {
		if strings.Contains(m.Text, "after the wait") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("slack got the retried message %d times, want 1", n)
	}
	resp, err := http.Get(os.Getenv("SIGNOFF_URL") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`signoff_rate_limited_total{limit="publish"} 1`, `signoff_rate_limited_total{limit="client"} 0`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	var lines []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "calls refused: rate limited") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "publish") || !strings.Contains(lines[0], "e2e") {
		t.Errorf("serve's log lines for the 429: %q, want one naming the publish limit and the token", lines)
	}
}
