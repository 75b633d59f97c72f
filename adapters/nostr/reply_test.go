package nostr_test

import (
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/adapters/nostr/relaytest"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// noteReply is p's NIP-10 kind-1 reply to the gateway's event target.
func noteReply(p bottest.Person, target, gatewayKey, content string, at time.Time) gonostr.Event {
	ev := gonostr.Event{
		Kind: gonostr.KindTextNote, CreatedAt: gonostr.Timestamp(at.Unix()), Content: content,
		Tags: gonostr.Tags{{"e", target, "", "root"}, {"p", gatewayKey}},
	}
	if err := p.Key.Sign(&ev); err != nil {
		panic(err)
	}
	return ev
}

// TestOwnerNostrReplyDeniesWithReason: the owner answers the request's
// note with a signed reply "❌ use the staging bucket"; it denies, signed,
// and the requester's outcome names the reason.
func TestOwnerNostrReplyDeniesWithReason(t *testing.T) {
	relay := relaytest.Start(t)
	alice, bob := bottest.NewPerson("alice"), bottest.NewPerson("bob")
	h := start(t, persona(alice, []bottest.Person{bob}, 2, noteChannel(relay.URL())), []string{relay.URL()})
	r := h.submit(t)
	eventually(t, "a subscription", subscribed(relay))

	// A remark first: recorded, ignored, the request still waits.
	publish(t, relay.URL(), noteReply(bob, r.EventID, r.GatewayKey, "why is /srv/data full?", time.Now()))
	eventually(t, "bob's remark recorded", func() bool { return len(h.get(t, r.ID).Votes) == 1 })
	if got := h.get(t, r.ID); got.Status != bot.Pending || got.Votes[0].Result != bot.Ignored {
		t.Fatalf("after a remark: %s, votes %+v; want pending, the remark ignored", got.Status, got.Votes)
	}

	publish(t, relay.URL(), noteReply(alice, r.EventID, r.GatewayKey, "❌ use the staging bucket", time.Now()))
	got := h.env.Await(t, r.ID)
	if got.Status != bot.Denied {
		t.Fatalf("status = %s (%s), want denied", got.Status, got.DecisionReason)
	}
	v := got.Votes[len(got.Votes)-1]
	if v.Choice != bot.Deny || v.Result != bot.Counted || v.Proof != bot.ProofSigned || v.Reason != "use the staging bucket" {
		t.Errorf("alice's vote %+v; want a counted signed deny with her reason", v)
	}
	if out := bot.Outcome(got); !strings.Contains(out, `alice: "use the staging bucket"`) {
		t.Errorf("the requester's outcome does not carry alice's reason:\n%s", out)
	}
}

// TestStrangerNostrReplyNotCounted: a validly signed "approve" reply from a
// key no persona lists does not approve.
func TestStrangerNostrReplyNotCounted(t *testing.T) {
	relay := relaytest.Start(t)
	alice, mallory := bottest.NewPerson("alice"), bottest.NewPerson("mallory")
	h := start(t, persona(alice, nil, 0, noteChannel(relay.URL())), []string{relay.URL()})
	r := h.submit(t)
	eventually(t, "a subscription", subscribed(relay))

	ev := noteReply(mallory, r.EventID, r.GatewayKey, "approve: trust me", time.Now())
	publish(t, relay.URL(), ev)
	eventually(t, "mallory's reply handled", func() bool { return h.sink.calls("nostr:"+ev.ID) == 1 })
	got := h.get(t, r.ID)
	if got.Status != bot.Pending {
		t.Fatalf("a stranger's reply made the request %s", got.Status)
	}
	for _, v := range got.Votes {
		if v.Result == bot.Counted {
			t.Errorf("stranger's vote counted: %+v", v)
		}
	}
}

// TestForgedNostrReplyDropped: replies a lying relay makes up in the
// owner's name — a bad signature, a signature over other content than the
// id says, mallory's signature under alice's pubkey — cast nothing, and
// do not shadow the genuine reply with the same id.
func TestForgedNostrReplyDropped(t *testing.T) {
	relay := relaytest.Start(t)
	alice, mallory := bottest.NewPerson("alice"), bottest.NewPerson("mallory")
	h := start(t, persona(alice, nil, 0, noteChannel(relay.URL())), []string{relay.URL()})
	r := h.submit(t)
	eventually(t, "a subscription", subscribed(relay))

	genuine := noteReply(alice, r.EventID, r.GatewayKey, "❌ use the staging bucket", time.Now())
	badSig := genuine
	badSig.Sig = strings.Repeat("ab", 64)
	badID := noteReply(alice, r.EventID, r.GatewayKey, "✅ ship it", time.Now())
	badID.ID = genuine.ID
	alienSig := noteReply(mallory, r.EventID, r.GatewayKey, "✅ ship it", time.Now())
	alienSig.PubKey = alice.Key.PublicKey()
	alienSig.ID = alienSig.GetID() // the id matches; the signature is mallory's
	for _, forged := range []gonostr.Event{badSig, badID, alienSig} {
		if n := relay.Inject(mustJSON(forged)); n == 0 {
			t.Fatalf("no subscription took the injected reply")
		}
	}
	eventually(t, "three dropped replies logged", func() bool { return h.logs.count("reply dropped") >= 3 })
	if n := h.sink.total(); n != 0 {
		t.Fatalf("%d forged replies reached the gateway", n)
	}
	if got := h.get(t, r.ID); got.Status != bot.Pending || len(got.Votes) != 0 {
		t.Fatalf("after forged replies: %s, votes %+v", got.Status, got.Votes)
	}
	publish(t, relay.URL(), genuine)
	if got := h.env.Await(t, r.ID); got.Status != bot.Denied {
		t.Fatalf("status = %s, want denied by the genuine reply", got.Status)
	}
}

// TestNostrReplyToAnotherEventIgnored: alice's "❌" answering another note
// in the request's thread (root = the request, reply = someone's note) is
// not an answer to the request.
func TestNostrReplyToAnotherEventIgnored(t *testing.T) {
	relay := relaytest.Start(t)
	alice := bottest.NewPerson("alice")
	h := start(t, persona(alice, nil, 0, noteChannel(relay.URL())), []string{relay.URL()})
	r := h.submit(t)
	eventually(t, "a subscription", subscribed(relay))

	other := strings.Repeat("ab", 32)
	ev := gonostr.Event{
		Kind: gonostr.KindTextNote, CreatedAt: gonostr.Timestamp(time.Now().Unix()), Content: "❌ no",
		Tags: gonostr.Tags{{"e", r.EventID, "", "root"}, {"e", other, "", "reply"}, {"p", r.GatewayKey}},
	}
	if err := alice.Key.Sign(&ev); err != nil {
		t.Fatal(err)
	}
	publish(t, relay.URL(), ev)
	eventually(t, "the reply seen and ignored", func() bool { return h.logs.count("reply to another event ignored", ev.ID) == 1 })
	// Then her direct answer counts: the adapter was listening all along.
	publish(t, relay.URL(), noteReply(alice, r.EventID, r.GatewayKey, "approved", time.Now()))
	if got := h.env.Await(t, r.ID); got.Status != bot.Approved || len(got.Votes) != 1 {
		t.Fatalf("status %s, votes %+v; want approved by the direct reply alone", got.Status, got.Votes)
	}
	if n := h.sink.calls("nostr:" + ev.ID); n != 0 {
		t.Errorf("the reply to another event was cast %d times", n)
	}
}
