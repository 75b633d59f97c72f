package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/adapters/discord/discordfake"
	"github.com/signoff/signoff/adapters/nostr/relaytest"
	"github.com/signoff/signoff/adapters/slack/slackfake"
	"github.com/signoff/signoff/bot"
)

// postPublish calls POST /v1/publish with tok and returns the status and body.
func postPublish(t *testing.T, tok string, body any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, os.Getenv("SIGNOFF_URL")+"/v1/publish", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

func makeToken(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := cli(append([]string{"tokens", "create"}, args...)...)
	if code != 0 {
		t.Fatalf("tokens create %v = %d %q %q", args, code, out, errs)
	}
	return lastLine(out)
}

// TestPublishPostsAPlainEscapedMessageOnEveryChannel: POST /v1/publish
// through real serve wiring reaches a fake Slack, a fake Discord and a
// relay as a plain message marked as the agent's, escaped, with no
// buttons or reactions; it is audited; bad text and foreign personas or
// missing scopes post nothing.
func TestPublishPostsAPlainEscapedMessageOnEveryChannel(t *testing.T) {
	sl := slackfake.New(t)
	t.Setenv("SIGNOFF_SLACK_BOT_TOKEN", slackfake.BotToken)
	t.Setenv("SIGNOFF_SLACK_APP_TOKEN", slackfake.AppToken)
	t.Setenv("SIGNOFF_SLACK_API_URL", sl.APIURL)
	dc := discordfake.New(t)
	t.Setenv("SIGNOFF_DISCORD_BOT_TOKEN", strings.TrimPrefix(dc.Token, "Bot "))
	t.Setenv("SIGNOFF_DISCORD_API_URL", dc.URL)
	relay := relaytest.Start(t)
	gateway(t, demoPersona+"channels:\n  - slack: C0123456\n  - discord: \"998877665544332211\"\n  - nostr:\n      relays: ["+relay.URL()+"]\n")

	pub := makeToken(t, "--name", "release-bot", "--scopes", "publish", "--personas", "demo")
	text := "v1.2 released \x1b[2J\u202egnp.exe <!channel> @everyone"
	code, body := postPublish(t, pub, map[string]string{"persona": "demo", "text": text})
	if code != http.StatusOK {
		t.Fatalf("publish = %d %s", code, body)
	}
	var res bot.PublishResult
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Posted) != 3 || len(res.Failed) != 0 {
		t.Fatalf("publish = %s, want posted on slack, discord and nostr", body)
	}
	want := `📣 from agent demo: v1.2 released \x1b[2J\u202egnp.exe`

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	post, err := sl.Next(ctx, "chat.postMessage")
	if err != nil {
		t.Fatal(err)
	}
	if post.Channel != "C0123456" || !strings.Contains(post.Text, want) || strings.Contains(post.Text, "\x1b") ||
		strings.Contains(post.Text, "<!channel>") || post.Blocks != nil || strings.Contains(post.Text, "react") {
		t.Errorf("slack got %+v, want %q escaped, no blocks, no @channel", post, want)
	}
	if n := len(sl.Pending("reactions.add")); n != 0 {
		t.Errorf("slack: %d reactions added to a published message", n)
	}

	posts := dc.Posts()
	if len(posts) != 1 || posts[0].ChannelID != "998877665544332211" {
		t.Fatalf("discord posts %+v, want one in 998877665544332211", posts)
	}
	var msg struct {
		Content         string          `json:"content"`
		Components      json.RawMessage `json:"components"`
		AllowedMentions struct {
			Parse []string `json:"parse"`
		} `json:"allowed_mentions"`
	}
	if err := json.Unmarshal(posts[0].Body, &msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg.Content, want) || strings.ContainsAny(msg.Content, "\x1b\u202e") ||
		(len(msg.Components) > 0 && string(msg.Components) != "null" && string(msg.Components) != "[]") ||
		!bytes.Contains(posts[0].Body, []byte(`"allowed_mentions":{"parse":[]`)) {
		t.Errorf("discord got %s, want %q escaped, no components, no mentions", posts[0].Body, want)
	}

	evs := relay.Events(gonostr.Filter{Kinds: []int{1}, Tags: gonostr.TagMap{"t": {"signoff"}}})
	var note *gonostr.Event
	for i := range evs {
		if strings.HasPrefix(evs[i].Content, "📣") {
			note = &evs[i]
		}
	}
	if note == nil {
		t.Fatalf("no kind-1 publish note on the relay: %+v", evs)
	}
	if ok, _ := note.CheckSignature(); !ok || !strings.Contains(note.Content, want) || strings.ContainsAny(note.Content, "\x1b\u202e") || note.Tags.GetFirst([]string{"signoff"}) != nil {
		t.Errorf("nostr note %+v: want signed, escaped, no signoff request tag", note)
	}

	audit, err := os.ReadFile(filepath.Join(os.Getenv("SIGNOFF_DATA_DIR"), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(audit), "\n") {
		if strings.Contains(l, `"type":"publish"`) {
			line = l
		}
	}
	if !strings.Contains(line, `"token":"release-bot"`) || !strings.Contains(line, `"persona":"demo"`) || !strings.Contains(line, `"sha256":"`) || !strings.Contains(line, "C0123456") {
		t.Errorf("audit record %q: want token, persona, digest and where it went", line)
	}

	// Refusals: nothing more is posted for any of them.
	other := makeToken(t, "--name", "other-bot", "--scopes", "publish", "--personas", "other")
	noScope := makeToken(t, "--name", "requester", "--scopes", "request")
	for _, c := range []struct {
		name, tok string
		body      map[string]string
		want      int
	}{
		{"another persona's token", other, map[string]string{"persona": "demo", "text": "hi"}, http.StatusForbidden},
		{"case-twisted persona key", other, map[string]string{"PERSONA": "demo", "text": "hi"}, http.StatusForbidden},
		{"token without publish", noScope, map[string]string{"persona": "demo", "text": "hi"}, http.StatusForbidden},
		{"empty text", pub, map[string]string{"persona": "demo", "text": "  "}, http.StatusBadRequest},
		{"oversized text", pub, map[string]string{"persona": "demo", "text": strings.Repeat("é", bot.MaxPublishLen+1)}, http.StatusBadRequest},
	} {
		if code, body := postPublish(t, c.tok, c.body); code != c.want {
			t.Errorf("%s: publish = %d %s, want %d", c.name, code, body, c.want)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(sl.Pending("chat.postMessage")); n != 0 {
		t.Errorf("slack: %d messages posted by refused publishes", n)
	}
	if n := len(dc.Posts()); n != 1 {
		t.Errorf("discord: %d posts, want only the first", n)
	}
	long := strings.Repeat("é", bot.MaxPublishLen/2) + " " + strings.Repeat("e", bot.MaxPublishLen/2-1)
	if code, body := postPublish(t, pub, map[string]string{"persona": "demo", "text": long}); code != http.StatusOK || strings.Contains(body, `"discord"`) && strings.Contains(body, `"error"`) {
		t.Errorf("text of exactly %d chars: %d %s", bot.MaxPublishLen, code, body)
	}
	// Discord refuses content over 2000 characters (the fake does too):
	// the text goes out in parts that join to exactly what was published.
	var joined strings.Builder
	for i, p := range dc.Posts()[1:] {
		var m struct{ Content string }
		if err := json.Unmarshal(p.Body, &m); err != nil {
			t.Fatal(err)
		}
		if n := utf8.RuneCountInString(m.Content); n > 2000 {
			t.Errorf("discord part %d is %d characters, over Discord's 2000", i, n)
		}
		joined.WriteString(m.Content)
	}
	if want := bot.PublishText("demo", long); joined.String() != want {
		t.Errorf("discord parts join to %d characters, want the %d published", utf8.RuneCountInString(joined.String()), utf8.RuneCountInString(want))
	}

	// The CLI: signoff publish TEXT with the e2e token (all scopes).
	if code, out, errs := cli("publish", "--persona", "demo", "from", "the", "cli"); code != 0 || !strings.Contains(out, "posted on slack C0123456") || !strings.Contains(out, "posted on discord") || !strings.Contains(out, "posted on nostr") {
		t.Errorf("signoff publish = %d %q %q", code, out, errs)
	}
	if code, _, errs := cli("publish", "--persona", "demo"); code != 2 || !strings.Contains(errs, "publish takes the text") {
		t.Errorf("signoff publish without text = %d %q", code, errs)
	}
}

// TestPublishFloodIsLimited: an agent publishing in a loop gets a burst of
// bot.PublishBurst messages onto its persona's channels, then 429s that
// post nothing; another persona is not held back by it.
func TestPublishFloodIsLimited(t *testing.T) {
	sl := slackfake.New(t)
	t.Setenv("SIGNOFF_SLACK_BOT_TOKEN", slackfake.BotToken)
	t.Setenv("SIGNOFF_SLACK_APP_TOKEN", slackfake.AppToken)
	t.Setenv("SIGNOFF_SLACK_API_URL", sl.APIURL)
	gatewayPersonas(t, "", demoPersona+"channels:\n  - slack: C0123456\n",
		strings.Replace(demoPersona, "name: demo", "name: other", 1)+"channels:\n  - slack: C0OTHER\n")
	pub := makeToken(t, "--name", "release-bot", "--scopes", "publish")
	for i := range bot.PublishBurst {
		if code, body := postPublish(t, pub, map[string]string{"persona": "demo", "text": fmt.Sprintf("message %d", i)}); code != http.StatusOK {
			t.Fatalf("publish %d of the burst = %d %s", i, code, body)
		}
	}
	code, body := postPublish(t, pub, map[string]string{"persona": "demo", "text": "one too many"})
	if code != http.StatusTooManyRequests || !strings.Contains(body, `"rate_limited"`) || !strings.Contains(body, "try again in") {
		t.Errorf("publish past the burst = %d %s, want 429 rate_limited", code, body)
	}
	if code, body := postPublish(t, pub, map[string]string{"persona": "other", "text": "hi"}); code != http.StatusOK {
		t.Errorf("another persona's publish = %d %s", code, body)
	}
	time.Sleep(100 * time.Millisecond)
	n := 0
	for _, m := range sl.Pending("chat.postMessage") {
		if m.Channel == "C0123456" {
			n++
		}
	}
	if n != bot.PublishBurst {
		t.Errorf("slack got %d messages in demo's channel, want the burst of %d and nothing more", n, bot.PublishBurst)
	}
}
