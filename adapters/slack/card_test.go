package slack

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/signoff/signoff/bot"
)

var update = flag.Bool("update", false, "rewrite the golden card files in testdata/")

func sampleRequest() *bot.Request {
	created := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	return &bot.Request{
		ID: "k3j5x2m9q8w7e6r4", Persona: "demo", Kind: bot.KindCommand,
		Action: "rm -rf ./build && git push --force origin main", Reason: "clean up and publish the release",
		Status: bot.Pending, Level: bot.Dangerous,
		Reasons:   []string{"recursive delete of a root, home, or wildcard path", "force push rewrites shared history"},
		CreatedAt: created, Deadline: created.Add(5 * time.Minute),
	}
}

// The cards exactly as Slack receives them (the blocks form field).
func TestCardGolden(t *testing.T) {
	r := sampleRequest()
	decided := *r
	at := r.CreatedAt.Add(42 * time.Second)
	decided.Status, decided.DecidedBy, decided.DecidedAt = bot.Approved, []string{"alice"}, &at
	tests := []struct {
		file   string
		blocks []slackapi.Block
	}{
		{"card_pending.golden.json", requestCard(r)},
		{"card_approved.golden.json", decidedCard(&decided)},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := json.MarshalIndent(tt.blocks, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", tt.file)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("card differs from %s (go test -update rewrites it):\n%s", path, got)
			}
		})
	}
}

// What an agent writes is shown literally: it cannot close the code block,
// fake a label, mention @channel or link, in the card or the fallback text.
func TestCardShowsAgentTextLiterally(t *testing.T) {
	r := sampleRequest()
	r.Action = "ls\n```\n*Risk:* safe <!channel> <https://evil.example|docs>"
	r.Reason = "*urgent* <@U01ALICE> & more"
	raw, err := json.Marshal(requestCard(r))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []json.RawMessage
	json.Unmarshal(raw, &blocks)
	var rich struct {
		Elements []struct {
			Type     string `json:"type"`
			Elements []struct {
				Type, Text string
				Style      *struct{ Bold bool }
			} `json:"elements"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(blocks[1], &rich); err != nil {
		t.Fatal(err)
	}
	// The risk leads; then the action (preformatted) and the reason.
	if first := rich.Elements[0]; len(first.Elements) == 0 || first.Elements[0].Text != "Risk: " {
		t.Errorf("first element = %+v, want the risk before any agent text", first)
	}
	at := 0
	for i, e := range rich.Elements {
		if e.Type == "rich_text_preformatted" {
			at = i
		}
	}
	pre := rich.Elements[at]
	if pre.Type != "rich_text_preformatted" || len(pre.Elements) != 1 || pre.Elements[0].Type != "text" || pre.Elements[0].Text != r.Action {
		t.Errorf("action element = %+v, want one literal text element holding the action", pre)
	}
	reason := rich.Elements[at+1].Elements[1]
	if reason.Type != "text" || reason.Text != r.Reason || reason.Style != nil {
		t.Errorf("reason element = %+v, want the literal unstyled reason", reason)
	}
	if strings.Contains(string(raw), `"mrkdwn"`) {
		t.Errorf("card has mrkdwn text objects; agent text must never be parsed as mrkdwn:\n%s", raw)
	}
	// requestText escapes the fallback; check what it sends.
	text := requestText(r)
	if !strings.Contains(text, "&lt;!channel&gt;") {
		t.Fatalf("fallback text lost the action: %q", text)
	}
}

func TestFallbackTextIsEscapedOnTheWire(t *testing.T) {
	// slack-go's escape turns <, > and & into entities, so Slack neither
	// pings nor links.
	r := sampleRequest()
	r.Action = "echo <!channel> & <https://evil.example|x>"
	_, vals, err := slackapi.UnsafeApplyMsgOptions("xoxb-x", "C1", "https://slack.com/api/", slackapi.MsgOptionText(requestText(r), false))
	if err != nil {
		t.Fatal(err)
	}
	got := vals.Get("text")
	for _, bad := range []string{"<!channel>", "<https://"} {
		if strings.Contains(got, bad) {
			t.Errorf("fallback text on the wire contains %q: %q", bad, got)
		}
	}
	if !strings.Contains(got, "&lt;!channel&gt; &amp; ") {
		t.Errorf("fallback text on the wire = %q, want entities", got)
	}
}

func TestCardClipsLongText(t *testing.T) {
	r := sampleRequest()
	r.Action = strings.Repeat("a", maxActionRunes+10)
	for range 30 {
		r.Reasons = append(r.Reasons, "a reason")
	}
	raw, _ := json.Marshal(requestCard(r))
	if !strings.Contains(string(raw), "… (10 more characters)") {
		t.Errorf("long action not clipped with a note")
	}
	if !strings.Contains(string(raw), "… and 22 more") {
		t.Errorf("long reason list not cut with a note")
	}
	if n := len(requestText(r)); n > maxFallback+200 {
		t.Errorf("fallback text is %d bytes", n)
	}
}

func TestReactionChoice(t *testing.T) {
	tests := map[string]bot.Choice{
		"white_check_mark": bot.Approve, "heavy_check_mark": bot.Approve, "heavy_check_mark::skin-tone-2": bot.Approve,
		"x": bot.Deny, "negative_squared_cross_mark": bot.Deny,
		"+1": bot.Other, "eyes": bot.Other, "": bot.Other, "approve": bot.Other, "X": bot.Other,
	}
	for name, want := range tests {
		if got := reactionChoice(name); got != want {
			t.Errorf("reactionChoice(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestSlackIDAndTS(t *testing.T) {
	ids := map[string]bool{"U01ALICE": true, "C0123456": true, "W0ENTERPRISE": true, "k3j5x2m9q8w7e6r4": true,
		"": false, "U 1": false, "U{1}": false, "Ü1": false, strings.Repeat("A", 65): false}
	for s, want := range ids {
		if got := slackID(s); got != want {
			t.Errorf("slackID(%q) = %v, want %v", s, got, want)
		}
	}
	tss := map[string]bool{"1355517523.000005": true, "1.2": true,
		"": false, "1355517523": false, ".000005": false, "1355517523.": false, "13a.1": false, "1.2.3": false, "-1.2": false}
	for s, want := range tss {
		if got := slackTS(s); got != want {
			t.Errorf("slackTS(%q) = %v, want %v", s, got, want)
		}
	}
}
