package slack_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/signoff/signoff/adapters/channeltest"
	"github.com/signoff/signoff/adapters/slack/slackfake"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// TestChannelSuite runs the behaviours every channel shares against the
// Slack adapter and its fake.
func TestChannelSuite(t *testing.T) {
	channeltest.Run(t, slackDriver{channeltest.Fixed{Platform: bot.Slack, IDs: slackIDs, Target: channelID, Cards: true}})
}

type slackDriver struct{ channeltest.Fixed }

var slackIDs = map[string]string{"alice": alice, "bob": bob, "carol": carol, "agent": agentUser}

func (slackDriver) Start(t *testing.T, p bot.Persona) channeltest.Harness {
	return &slackSuite{h: newHarness(t, p)}
}

type slackSuite struct {
	h     *harness
	mu    sync.Mutex
	posts []channeltest.Post
	n     int // interactions sent
}

func (s *slackSuite) Env() *bottest.Env { return s.h.env }

var slackMention = regexp.MustCompile(`<@([A-Z0-9]+)>`)

// Posts reads every chat.postMessage the fake has had: the blocks' text
// then the fallback text, Slack's entities read; pings are the <@U…> in
// the text and the user elements of the blocks.
func (s *slackSuite) Posts(t *testing.T) []channeltest.Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.h.fake.Pending("chat.postMessage") {
		text, blocks := c.Form.Get("text"), c.Form.Get("blocks")
		var decoded any
		if err := json.Unmarshal([]byte(blocks), &decoded); err != nil {
			t.Fatalf("blocks %q: %v", blocks, err)
		}
		var shown []string
		var pings []string
		walk(decoded, func(k string, v string) {
			switch k {
			case "text":
				shown = append(shown, v)
			case "user_id":
				pings = append(pings, v)
			}
		})
		shown = append(shown, text)
		for _, m := range slackMention.FindAllStringSubmatch(text, -1) {
			if !strings.Contains(strings.Join(pings, " "), m[1]) {
				pings = append(pings, m[1])
			}
		}
		unescape := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")
		s.posts = append(s.posts, channeltest.Post{
			Text:   unescape.Replace(strings.Join(shown, "\n")),
			Pings:  pings,
			Always: strings.Contains(blocks, `"action_id":"signoff_always"`),
		})
	}
	return append([]channeltest.Post(nil), s.posts...)
}

// walk calls fn with each string value of v and its key, depth first.
func walk(v any, fn func(key, value string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok {
				fn(k, s)
			} else {
				walk(x, fn)
			}
		}
	case []any:
		for _, x := range v {
			walk(x, fn)
		}
	}
}

// Answer clicks the card's button, as Slack posts a block action.
func (s *slackSuite) Answer(t *testing.T, r *bot.Request, name string, c bot.Choice) {
	var ref bot.MessageRef
	for _, m := range r.Messages {
		if m.Platform == bot.Slack {
			ref = m
		}
	}
	s.mu.Lock()
	s.n++
	ts := fmt.Sprintf("1700000010.%06d", s.n)
	s.mu.Unlock()
	action := map[bot.Choice]string{bot.Approve: "signoff_approve", bot.Deny: "signoff_deny", bot.Always: "signoff_always"}[c]
	payload := slackfake.BlockActions(slackIDs[name], ref.Channel, ref.ID, action, r.ID, ts, s.h.fake.ResponseURL("c"))
	if status, body := s.h.postClick(payload); status != http.StatusOK {
		t.Fatalf("POST /slack/interactions = %d %s", status, body)
	}
}
