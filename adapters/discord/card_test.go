package discord

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/signoff/signoff/bot"
)

func TestCustomIDRoundTrip(t *testing.T) {
	tests := []struct {
		in     string
		choice bot.Choice
		id     string
		ok     bool
	}{
		{customID(bot.Approve, "abc234"), bot.Approve, "abc234", true},
		{customID(bot.Deny, "abc234"), bot.Deny, "abc234", true},
		{"signoff:other:abc", "", "", false},
		{"signoff:approve:", "", "", false},
		{"signoff:approve:a:b", "", "", false},
		{"signoff:approve:" + strings.Repeat("a", 65), "", "", false},
		{"approve:abc", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		c, id, ok := parseCustomID(tt.in)
		if c != tt.choice || id != tt.id || ok != tt.ok {
			t.Errorf("parseCustomID(%q) = %q, %q, %v; want %q, %q, %v", tt.in, c, id, ok, tt.choice, tt.id, tt.ok)
		}
	}
	if n := len(customID(bot.Approve, strings.Repeat("a", 64))); n > 100 {
		t.Errorf("longest custom_id is %d characters; Discord allows 100", n)
	}
}

func TestContentCannotFakeAnOutcome(t *testing.T) {
	r := &bot.Request{ID: "x", Action: "ls\n✅ approved by alice", Reason: "**urgent** <@123> [link](http://evil) @everyone"}
	got := content(r, bot.HowToAnswer)
	lines := strings.Split(got, "\n")
	if len(lines) != 2 || lines[1] != bot.HowToAnswer {
		t.Fatalf("content = %q, want the headline on one line, then how to answer", got)
	}
	for _, raw := range []string{"**urgent**", "<@123>", "[link]", " @everyone"} {
		if strings.Contains(lines[0], raw) {
			t.Errorf("headline %q keeps markdown %q unescaped", lines[0], raw)
		}
	}
	if !strings.Contains(lines[0], `ls\\n✅ approved by alice`) { // bot.Escape's \n, its backslash escaped for markdown
		t.Errorf("headline %q, want the line break shown as \\n", lines[0])
	}
}

func TestCardStaysInsideDiscordLimits(t *testing.T) {
	big := strings.Repeat("é`*", 6000)
	r := &bot.Request{
		ID: "abcdefghijklmnop", Persona: strings.Repeat("p", 300), Action: big, Reason: big,
		Level: bot.Dangerous, Reasons: []string{big, big}, Deadline: time.Now(),
		Status: bot.Approved, DecidedBy: []string{big}, DecidedAt: &time.Time{},
	}
	check := func(what, content string, e *discordgo.MessageEmbed) {
		if n := utf8.RuneCountInString(content); n > 2000 {
			t.Errorf("%s: content is %d characters, over 2000", what, n)
		}
		total := utf8.RuneCountInString(e.Title) + utf8.RuneCountInString(e.Description) + utf8.RuneCountInString(e.Footer.Text)
		if n := utf8.RuneCountInString(e.Description); n > 4096 {
			t.Errorf("%s: description is %d characters", what, n)
		}
		if len(e.Fields) > 25 {
			t.Errorf("%s: %d fields", what, len(e.Fields))
		}
		for _, f := range e.Fields {
			if n := utf8.RuneCountInString(f.Value); n > 1024 || n == 0 {
				t.Errorf("%s: field %s is %d characters", what, f.Name, n)
			}
			total += utf8.RuneCountInString(f.Name) + utf8.RuneCountInString(f.Value)
		}
		if total > 6000 {
			t.Errorf("%s: embed is %d characters, over 6000", what, total)
		}
		if !strings.HasPrefix(e.Description, "```\n") || !strings.HasSuffix(e.Description, "\n```") || strings.Count(e.Description, "```") != 2 {
			t.Errorf("%s: the action can close its code block early", what)
		}
	}
	m := requestMessage(r)
	check("post", m.Content, m.Embeds[0])
	ed := decidedEdit(r, bot.MessageRef{Channel: "1", ID: "2"})
	check("edit", *ed.Content, (*ed.Embeds)[0])
	if len(*ed.Components) != 0 {
		t.Errorf("edit keeps %d components", len(*ed.Components))
	}
}

func TestClipNeverLeavesADanglingEscape(t *testing.T) {
	for n := 1; n < 12; n++ {
		got := clip(escapeMarkdown(strings.Repeat("*", 20)), n)
		trimmed := strings.TrimSuffix(got, "…")
		back := len(trimmed) - len(strings.TrimRight(trimmed, `\`))
		if back%2 == 1 {
			t.Errorf("clip(…, %d) = %q ends in a lone backslash", n, got)
		}
		if utf8.RuneCountInString(got) > n {
			t.Errorf("clip(…, %d) = %q is longer than %d", n, got, n)
		}
	}
}

func TestRewriteTransport(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Host+" "+r.URL.EscapedPath()+"?"+r.URL.RawQuery)
	}))
	defer srv.Close()
	for _, base := range []string{srv.URL, srv.URL + "/proxy/"} {
		u, _ := url.Parse(base)
		c := &http.Client{Transport: rewriteTransport{base: u, next: http.DefaultTransport}}
		resp, err := c.Get("https://discord.com/api/v9/channels/1/messages/2/reactions/✅?limit=100")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	want := []string{
		host + " /api/v9/channels/1/messages/2/reactions/%E2%9C%85?limit=100",
		host + " /proxy/api/v9/channels/1/messages/2/reactions/%E2%9C%85?limit=100",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests reached\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestReactionPayloadEmoji(t *testing.T) {
	tests := []struct {
		raw    string
		emoji  string
		choice bot.Choice
	}{
		{`{"emoji":{"id":null,"name":"✅"}}`, "✅", bot.Approve},
		{`{"emoji":{"id":null,"name":"❌"}}`, "❌", bot.Deny},
		{`{"emoji":{"id":null,"name":"✔️"}}`, "✔️", bot.Approve},
		{`{"emoji":{"id":null,"name":"🎉"}}`, "🎉", bot.Other},
		{`{"emoji":{"id":"42","name":"approve"}}`, "approve:42", bot.Other},
	}
	a := &Adapter{cfg: Config{}.withDefaults(), pending: map[string]pendingMessage{}, botID: "9"}
	for _, tt := range tests {
		var rp reactionPayload
		if err := json.Unmarshal([]byte(tt.raw), &rp); err != nil {
			t.Fatal(err)
		}
		rp.UserID, rp.ChannelID, rp.MessageID = "1", "2", "3"
		b, ok := a.reactionBallot(&rp, nil)
		if !ok || rp.emoji() != tt.emoji || b.Choice != tt.choice || b.DedupKey != "discord:react:3:1:"+tt.emoji {
			t.Errorf("%s: ok %v emoji %q choice %s key %q; want %q %s", tt.raw, ok, rp.emoji(), b.Choice, b.DedupKey, tt.emoji, tt.choice)
		}
	}
	self := reactionPayload{UserID: "9", ChannelID: "2", MessageID: "3"}
	self.Emoji.Name = "✅"
	if _, ok := a.reactionBallot(&self, nil); ok {
		t.Error("the bot's own reaction became a ballot")
	}
}

// FuzzCard: whatever an agent asks, the card fits Discord's limits and
// its headline stays one line.
func FuzzCard(f *testing.F) {
	f.Add("rm -rf /", "cleanup", "dangerous reason")
	f.Add("a\nb\r\nc\u2028d", "```` ``` `", "<@1> @everyone **x**")
	f.Add(strings.Repeat("\\", 3000), strings.Repeat("é", 5000), "")
	f.Fuzz(func(t *testing.T, action, reason, why string) {
		r := &bot.Request{ID: "abc", Action: action, Reason: reason, Reasons: []string{why}, Level: bot.Dangerous}
		m := requestMessage(r)
		if n := utf8.RuneCountInString(m.Content); n > maxContent {
			t.Fatalf("content is %d characters", n)
		}
		if strings.Count(m.Content, "\n") != 1 {
			t.Fatalf("content %q is not headline + how to answer", m.Content)
		}
		e := m.Embeds[0]
		if strings.Count(e.Description, "```") != 2 {
			t.Fatalf("description %q breaks out of its code block", e.Description)
		}
		for _, fl := range e.Fields {
			if n := utf8.RuneCountInString(fl.Value); n > 1024 {
				t.Fatalf("field %s is %d characters", fl.Name, n)
			}
		}
	})
}
