package discord_test

import (
	"strings"
	"testing"

	"github.com/signoff/signoff/adapters/channeltest"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// TestChannelSuite runs the behaviours every channel shares against the
// Discord adapter and its fake.
func TestChannelSuite(t *testing.T) {
	channeltest.Run(t, discordDriver{channeltest.Fixed{Platform: bot.Discord, IDs: discordIDs, Target: channel, Cards: true}})
}

type discordDriver struct{ channeltest.Fixed }

var discordIDs = map[string]string{"alice": alice, "bob": bob, "carol": carol, "agent": agentID}

func (discordDriver) Start(t *testing.T, p bot.Persona) channeltest.Harness {
	return discordSuite{start(t, p, false)}
}

type discordSuite struct{ h *harness }

func (s discordSuite) Env() *bottest.Env { return s.h.env }

// Posts reads every message the fake was sent: its content, then each
// embed's title, description and fields; what pings is what
// allowed_mentions lets Discord notify (users, and @everyone/roles when
// parse names them).
func (s discordSuite) Posts(t *testing.T) []channeltest.Post {
	var out []channeltest.Post
	for _, p := range s.h.fake.Posts() {
		b := parseCard(t, p.Body)
		shown := []string{b.Content}
		for _, e := range b.Embeds {
			shown = append(shown, e.Title, e.Description)
			for _, f := range e.Fields {
				shown = append(shown, f.Name+": "+f.Value)
			}
		}
		var pings []string
		if m := b.AllowedMentions; m != nil {
			pings = append(pings, m.Users...)
			for _, kind := range m.Parse {
				pings = append(pings, "@"+kind)
			}
		}
		out = append(out, channeltest.Post{
			Text:   strings.Join(shown, "\n"),
			Pings:  pings,
			Always: strings.Contains(string(p.Body), `"custom_id":"signoff:always:`),
		})
	}
	return out
}

// Answer clicks the message's button over the gateway connection.
func (s discordSuite) Answer(t *testing.T, r *bot.Request, name string, c bot.Choice) {
	for _, m := range r.Messages {
		if m.Platform == bot.Discord {
			s.h.click(t, m, discordIDs[name], c, r.ID)
			return
		}
	}
	t.Fatalf("request %s has no Discord message", r.ID)
}
