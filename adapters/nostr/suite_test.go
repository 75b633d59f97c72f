package nostr_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/adapters/channeltest"
	"github.com/signoff/signoff/adapters/nostr/relaytest"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// TestChannelSuite runs the behaviours every channel shares against the
// Nostr adapter and a test relay.
func TestChannelSuite(t *testing.T) {
	d := &nostrDriver{relay: relaytest.Start(t), people: map[string]bottest.Person{}}
	channeltest.Run(t, d)
}

// nostrDriver: one relay for the suite; each person a key of their own.
type nostrDriver struct {
	relay  *relaytest.Relay
	mu     sync.Mutex
	people map[string]bottest.Person
}

func (d *nostrDriver) person(name string) bottest.Person {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.people[name]
	if !ok {
		p = bottest.NewPerson(name)
		d.people[name] = p
	}
	return p
}

func (d *nostrDriver) Identity(name string) bot.Identity { return d.person(name).Identity() }
func (d *nostrDriver) Channel() bot.ChannelConfig        { return noteChannel(d.relay.URL()) }

// ShowsGrantScope: a note has no card; ♾️ is taken all the same.
func (d *nostrDriver) ShowsGrantScope() bool { return false }

func (d *nostrDriver) Start(t *testing.T, p bot.Persona) channeltest.Harness {
	return &nostrSuite{d: d, h: start(t, p, []string{d.relay.URL()})}
}

type nostrSuite struct {
	d    *nostrDriver
	h    *harness
	mu   sync.Mutex
	seen []gonostr.Event // in the order first read
}

func (s *nostrSuite) Env() *bottest.Env { return s.h.env }

// Posts reads the notes this gateway published on the relay (kind 1, by
// its key), each once, in the order they appeared: the content is what
// is shown, the p tags whom it notifies.
func (s *nostrSuite) Posts(t *testing.T) []channeltest.Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := s.d.relay.Events(gonostr.Filter{Authors: []string{s.h.env.Key.PublicKey()}, Kinds: []int{gonostr.KindTextNote}})
	slices.SortStableFunc(evs, func(a, b gonostr.Event) int { return int(a.CreatedAt - b.CreatedAt) })
	for _, ev := range evs {
		if !slices.ContainsFunc(s.seen, func(e gonostr.Event) bool { return e.ID == ev.ID }) {
			s.seen = append(s.seen, ev)
		}
	}
	var out []channeltest.Post
	for _, ev := range s.seen {
		var pings []string
		for _, tag := range ev.Tags.GetAll([]string{"p"}) {
			pings = append(pings, tag.Value())
		}
		out = append(out, channeltest.Post{Text: ev.Content, Pings: pings})
	}
	return out
}

// Answer publishes the person's NIP-25 reaction to the relay, as their
// Nostr client would.
func (s *nostrSuite) Answer(t *testing.T, r *bot.Request, name string, c bot.Choice) {
	content := map[bot.Choice]string{bot.Approve: "✅", bot.Deny: "❌", bot.Always: "♾️"}[c]
	publish(t, s.d.relay.URL(), reaction(s.d.person(name), r.EventID, r.GatewayKey, content, time.Now()))
}
