package nostr_test

import (
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/signoff/signoff/adapters/nostr/relaytest"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// What Nostr adds to the channel suite's escalation (whom it pings is
// checked there): the note is a reply under the request's event, signed
// by the gateway, naming bob as nostr:npub… and dave in plain text, and a
// reminder publishes nothing new.
func TestEscalationIsASignedReplyUnderTheRequest(t *testing.T) {
	ra := relaytest.Start(t)
	alice, bob, carol, agent := bottest.NewPerson("alice"), bottest.NewPerson("bob"), bottest.NewPerson("carol"), bottest.NewPerson("agent")
	p := persona(alice, []bottest.Person{bob, carol}, 2, noteChannel(ra.URL()))
	p.Agent = []bot.Identity{agent.Identity()}
	p.Members = append(p.Members, bot.Person{Name: "dave"})
	p.Remind = time.Minute
	p.Escalate = &bot.Escalation{After: 3 * time.Minute, To: []string{"bob", "dave"}}
	h := start(t, p, []string{ra.URL()})
	r := h.submit(t)
	ours := func() []gonostr.Event {
		return ra.Events(gonostr.Filter{Authors: []string{r.GatewayKey}, Tags: gonostr.TagMap{"signoff": {r.ID}}})
	}
	h.env.Gateway.Nudge(t.Context(), r.CreatedAt.Add(time.Minute))
	if got := ours(); len(got) != 1 || got[0].ID != r.EventID {
		t.Fatalf("after the reminder the relay holds %d events of ours, want the request's alone", len(got))
	}
	h.env.Gateway.Nudge(t.Context(), r.CreatedAt.Add(3*time.Minute))
	var esc *gonostr.Event
	for _, ev := range ours() {
		if ev.ID != r.EventID {
			esc = &ev
		}
	}
	if esc == nil {
		t.Fatal("no escalation event published")
	}
	npub, _ := nip19.EncodePublicKey(bob.Key.PublicKey())
	if !strings.Contains(esc.Content, "escalated to nostr:"+npub+", dave: still needs ") || strings.Count(esc.Content, "nostr:") != 1 {
		t.Errorf("escalation content = %q", esc.Content)
	}
	if root := esc.Tags.GetFirst([]string{"e"}); root == nil || root.Value() != r.EventID {
		t.Errorf("escalation is not under the request's event: %v", esc.Tags)
	}
	if ok, err := esc.CheckSignature(); !ok || err != nil {
		t.Errorf("escalation signature: %v %v", ok, err)
	}
}
