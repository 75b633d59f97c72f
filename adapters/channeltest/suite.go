// Package channeltest is one suite of behaviours every channel adapter
// must show, run against each platform's fake by that adapter's own tests
// (Teleport's shape: one suite, a driver per platform). A behaviour the
// three platforms share is written once here, not once per adapter.
//
// It imports bot, bot/bottest and bot/grants; never an adapter: each
// adapter's test package implements Driver with its own harness.
package channeltest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/grants"
)

// Driver is one platform behind its fake.
type Driver interface {
	// Identity is the identity on this platform of the suite's person
	// named name (alice, bob, carol, agent); every one of them has one.
	Identity(name string) bot.Identity
	// Channel is where a persona's requests go on this platform.
	Channel() bot.ChannelConfig
	// Start serves p on a real gateway (bottest) with this platform's
	// adapter as its channel, talking to the platform's fake.
	Start(t *testing.T, p bot.Persona) Harness
	// ShowsGrantScope: requests are posted as cards that show a grant's
	// scope and an Always answer before anyone answers. A platform
	// without cards (Nostr notes) takes ♾️ all the same.
	ShowsGrantScope() bool
}

// Fixed is the part of a Driver for a platform whose people have fixed
// ids (Slack, Discord): a driver embeds it and adds Start.
type Fixed struct {
	Platform bot.Platform
	IDs      map[string]string // the suite's people by name
	Target   string            // the channel requests are posted to
	Cards    bool              // see ShowsGrantScope
}

func (f Fixed) Identity(name string) bot.Identity {
	return bot.Identity{Platform: f.Platform, ID: f.IDs[name]}
}
func (f Fixed) Channel() bot.ChannelConfig {
	return bot.ChannelConfig{Platform: f.Platform, Target: f.Target}
}
func (f Fixed) ShowsGrantScope() bool { return f.Cards }

// Harness is a started platform.
type Harness interface {
	Env() *bottest.Env
	// Posts returns every message posted on the platform so far, in
	// order: request cards, reminders, escalations.
	Posts(t *testing.T) []Post
	// Answer delivers the answer c of the person named name to r, as
	// the platform delivers one (a click where there are buttons, else a
	// reaction), and returns once the gateway has it.
	Answer(t *testing.T, r *bot.Request, name string, c bot.Choice)
}

// Post is one posted message as people see it.
type Post struct {
	// Text is everything shown, in order, with the platform's own
	// escaping undone (JSON decoded, entities read), so what a person
	// reads is what the suite reads.
	Text string
	// Pings are the ids of the identities the message notifies.
	Pings []string
	// Always: the message offers a "don't ask again" answer.
	Always bool
}

// Run runs the suite against d.
func Run(t *testing.T, d Driver) {
	t.Run("DisguisedActionIsShownEscaped", func(t *testing.T) { disguise(t, d) })
	t.Run("AlwaysAnswerGrants", func(t *testing.T) { always(t, d) })
	if d.ShowsGrantScope() { // a platform without cards offers no Always to look for
		t.Run("NoAlwaysWithoutScope", func(t *testing.T) { noAlways(t, d) })
	}
	t.Run("EscalationPingsExactlyTheNamedMembers", func(t *testing.T) { escalate(t, d) })
}

func person(d Driver, name string) bot.Person {
	return bot.Person{Name: name, Identities: []bot.Identity{d.Identity(name)}}
}

// persona: alice owns it; bob and carol are members; approvalQuorum
// members approve without her.
func persona(d Driver, quorum int) bot.Persona {
	return bot.Persona{
		Name:           "demo",
		Agent:          []bot.Identity{d.Identity("agent")},
		Owner:          &bot.Person{Name: "alice", Identities: []bot.Identity{d.Identity("alice")}},
		Members:        []bot.Person{person(d, "bob"), person(d, "carol")},
		ApprovalQuorum: quorum,
		DenyQuorum:     1,
		Proof:          bot.ProofAny,
		Timeout:        5 * time.Minute,
		Channels:       []bot.ChannelConfig{d.Channel()},
	}
}

func posts(t *testing.T, h Harness, n int) []Post {
	t.Helper()
	ps := h.Posts(t)
	if len(ps) != n {
		t.Fatalf("%d messages posted, want %d: %+v", len(ps), n, ps)
	}
	return ps
}

// disguise: an agent's action holding terminal escapes and a bidi
// override reaches people as visible escapes, after the risk level, so
// it cannot pass for a harmless command.
func disguise(t *testing.T, d Driver) {
	h := d.Start(t, persona(d, 0))
	h.Env().Submit(t, bot.NewRequest{Persona: "demo",
		Action: "rm -rf ~/work # \x1b[27Dsafe \x1b[K \x1b[7C ls -la", Reason: "tidy \u202eup"})
	text := posts(t, h, 1)[0].Text
	if strings.ContainsAny(text, "\x1b\u202e") {
		t.Fatalf("the message keeps ESC or a bidi override: %q", text)
	}
	if !strings.Contains(text, `\x1b[27Dsafe`) || !strings.Contains(text, `\u202e`) {
		t.Errorf("the escapes are not shown as text: %q", text)
	}
	if risk, action := strings.Index(strings.ToLower(text), "dangerous"), strings.Index(text, "rm -rf"); risk < 0 || risk > action {
		t.Errorf("the risk does not come before the agent's words: %q", text)
	}
}

var scope = &bot.GrantScope{Tool: "bash", Program: "terraform", Subcommand: "apply", Workspace: "/srv/infra",
	Level: bot.Dangerous, Reasons: []string{}, TTL: 2 * time.Hour}

// always: a request with a grant scope shows the scope and its expiry
// (where the platform has cards), and the owner's Always approves it and
// makes the grant, by her.
func always(t *testing.T, d Driver) {
	h := d.Start(t, persona(d, 0))
	env := h.Env()
	env.Gateway.Grants = &grants.Maker{Store: env.Store}
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform apply", Reason: "ship", GrantScope: scope})
	card := posts(t, h, 1)[0]
	if d.ShowsGrantScope() {
		if !card.Always || !strings.Contains(card.Text, "terraform apply") || !strings.Contains(card.Text, "/srv/infra") || !strings.Contains(card.Text, "2h0m0s") {
			t.Fatalf("card %+v: want an Always answer and the scope with its expiry", card)
		}
	}
	h.Answer(t, r, "alice", bot.Always)
	if got := env.Await(t, r.ID); got.Status != bot.Approved || !got.Always {
		t.Fatalf("after alice's Always: %s always=%v", got.Status, got.Always)
	}
	gs, err := env.Store.Grants(context.Background(), "demo", time.Now())
	if err != nil || len(gs) != 1 || gs[0].ID != r.ID || gs[0].By[0] != "alice" {
		t.Fatalf("grants = %+v %v, want one by alice", gs, err)
	}
}

// noAlways: a request with nothing to grant offers no Always answer.
func noAlways(t *testing.T, d Driver) {
	h := d.Start(t, persona(d, 0))
	h.Env().Submit(t, bot.NewRequest{Persona: "demo", Action: "rm -rf /tmp/build", Reason: "clean"})
	if card := posts(t, h, 1)[0]; card.Always {
		t.Errorf("an Always answer on a request with no scope: %+v", card)
	}
}

// escalate: a reminder pings no one; an escalation pings exactly the
// members it names who have an identity on the platform, and names the
// others in plain text — a name made to look like a mention pings no one.
func escalate(t *testing.T, d Driver) {
	p := persona(d, 2)
	dave := "dave <@U0EVIL> @everyone"
	p.Members = append(p.Members, bot.Person{Name: dave})
	p.Remind = time.Minute
	p.Escalate = &bot.Escalation{After: 3 * time.Minute, To: []string{"bob", dave}}
	h := d.Start(t, p)
	env := h.Env()
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform destroy", Reason: "tear down"})
	n := len(posts(t, h, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	env.Gateway.Nudge(ctx, r.CreatedAt.Add(time.Minute))
	for _, reminder := range h.Posts(t)[n:] {
		if len(reminder.Pings) != 0 || strings.Contains(reminder.Text, "escalated") {
			t.Errorf("a reminder pings or escalates: %+v", reminder)
		}
	}
	n = len(h.Posts(t))
	env.Gateway.Nudge(ctx, r.CreatedAt.Add(3*time.Minute))
	after := h.Posts(t)[n:]
	if len(after) != 1 {
		t.Fatalf("%d messages after the escalation's time, want one", len(after))
	}
	esc := after[0]
	if want := []string{d.Identity("bob").ID}; !slices.Equal(esc.Pings, want) {
		t.Errorf("escalation pings %v, want bob alone (%v)", esc.Pings, want)
	}
	if !strings.Contains(esc.Text, "escalated to ") || !strings.Contains(esc.Text, "dave") || !strings.Contains(esc.Text, "still needs") {
		t.Errorf("escalation text %q: want bob and dave named and what it still needs", esc.Text)
	}
}
