package nostr_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/adapters/nostr"
	"github.com/signoff/signoff/adapters/nostr/relaytest"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

func TestQuorumOfTwoThroughTwoRelays(t *testing.T) {
	ra, rb := relaytest.Start(t), relaytest.Start(t)
	alice, bob, carol := bottest.NewPerson("alice"), bottest.NewPerson("bob"), bottest.NewPerson("carol")
	h := start(t, persona(alice, []bottest.Person{bob, carol}, 2, noteChannel(urls(ra, rb)...)), urls(ra, rb))
	r := h.submit(t)

	for _, relay := range []*relaytest.Relay{ra, rb} {
		got := relay.Events(gonostr.Filter{IDs: []string{r.EventID}})
		if len(got) != 1 {
			t.Fatalf("relay %s holds %d copies of the request event, want 1", relay.URL(), len(got))
		}
		for _, who := range []bottest.Person{alice, bob, carol} {
			if !got[0].Tags.ContainsAny("p", []string{who.Key.PublicKey()}) {
				t.Errorf("request event does not tag %s", who.Name)
			}
		}
		eventually(t, "a subscription on "+relay.URL(), subscribed(relay))
	}

	publish(t, ra.URL(), reaction(bob, r.EventID, r.GatewayKey, "✅", time.Now()))
	eventually(t, "bob's vote", func() bool { return len(h.get(t, r.ID).Votes) == 1 })
	if got := h.get(t, r.ID); got.Status != bot.Pending {
		t.Fatalf("after one of two approvals: %s, want pending", got.Status)
	}
	// A NIP-25 "+" (a like) is recorded and ignored; carol's ✅ decides.
	publish(t, rb.URL(), reaction(carol, r.EventID, r.GatewayKey, "+", time.Now()))
	eventually(t, "carol's like recorded", func() bool { return len(h.get(t, r.ID).Votes) == 2 })
	if got := h.get(t, r.ID); got.Status != bot.Pending || got.Votes[1].Result != bot.Ignored {
		t.Fatalf("after a + from carol: %s, votes %+v; want pending, the + ignored", got.Status, got.Votes)
	}
	publish(t, rb.URL(), reaction(carol, r.EventID, r.GatewayKey, "✅", time.Now()))

	got := h.env.Await(t, r.ID)
	if got.Status != bot.Approved {
		t.Fatalf("status = %s (%s), want approved", got.Status, got.DecisionReason)
	}
	by := slices.Clone(got.DecidedBy)
	slices.Sort(by)
	if !slices.Equal(by, []string{"bob", "carol"}) {
		t.Errorf("decided by %v, want bob and carol", got.DecidedBy)
	}
	for _, v := range got.Votes {
		if (v.Result != bot.Counted && v.Choice != bot.Other) || v.Proof != bot.ProofSigned {
			t.Errorf("vote %+v: want counted, signed", v)
		}
	}
}

func TestRelayDownOrRefusingAtPostTime(t *testing.T) {
	up, down, refusing := relaytest.Start(t), relaytest.Start(t), relaytest.Start(t)
	down.Stop()
	refusing.Refuse(func(*gonostr.Event) string { return "blocked: not on the allow list" })
	alice := bottest.NewPerson("alice")
	all := urls(up, down, refusing)
	h := start(t, persona(alice, nil, 0, noteChannel(all...)), all)

	r := h.submit(t) // still posted: one relay took it
	if len(up.Events(gonostr.Filter{IDs: []string{r.EventID}})) != 1 {
		t.Fatalf("the live relay does not hold the request event")
	}
	if len(refusing.Events(gonostr.Filter{})) != 0 {
		t.Fatalf("the refusing relay stored an event")
	}
	if h.logs.count("did not accept", refusing.URL(), "blocked") == 0 {
		t.Errorf("the refusing relay's OK false was not logged")
	}

	// The down relay comes back: the adapter reconnects and listens there
	// too, although the request was never posted on it.
	if err := down.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a subscription on the restarted relay", subscribed(down))
	publish(t, down.URL(), reaction(alice, r.EventID, r.GatewayKey, "✅", time.Now()))
	if got := h.env.Await(t, r.ID); got.Status != bot.Approved {
		t.Fatalf("status = %s (%s), want approved", got.Status, got.DecisionReason)
	}
}

func TestNoRelayUpFailsClosed(t *testing.T) {
	ra, rb := relaytest.Start(t), relaytest.Start(t)
	ra.Stop()
	rb.Stop()
	alice := bottest.NewPerson("alice")
	h := start(t, persona(alice, nil, 0, noteChannel(urls(ra, rb)...)), urls(ra, rb))

	r := h.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform destroy", Reason: "cleanup"})
	if r.Status != bot.Denied {
		t.Fatalf("status = %s, want denied (fail closed)", r.Status)
	}
	if !strings.Contains(r.DecisionReason, "no relay accepted") {
		t.Errorf("decision reason %q does not say no relay accepted", r.DecisionReason)
	}
}

func TestReactionMadeWhileRelayDownCountsAfterReconnect(t *testing.T) {
	relay := relaytest.Start(t)
	alice := bottest.NewPerson("alice")
	// A slow first reconnect makes the reaction reach the restarted relay
	// before the adapter does; with since=now (SimplePool) it would be lost.
	h := start(t, persona(alice, nil, 0, noteChannel(relay.URL())), []string{relay.URL()},
		func(c *nostr.Config) { c.MinBackoff = 600 * time.Millisecond })
	r := h.submit(t)
	eventually(t, "the adapter's subscription", subscribed(relay))
	_, reqsBefore := relay.Subscriptions()

	relay.Stop()
	made := time.Now().Add(-2 * time.Second) // signed while the relay is down
	ev := reaction(alice, r.EventID, r.GatewayKey, "✅", made)
	if err := relay.Restart(); err != nil {
		t.Fatal(err)
	}
	publish(t, relay.URL(), ev)

	got := h.env.Await(t, r.ID)
	if got.Status != bot.Approved {
		t.Fatalf("status = %s (%s), want approved", got.Status, got.DecisionReason)
	}
	_, reqsAfter := relay.Subscriptions()
	if reqsAfter <= reqsBefore {
		t.Errorf("no new REQ after the restart (%d before, %d after)", reqsBefore, reqsAfter)
	}
	total, stored := relay.Deliveries(ev.ID)
	t.Logf("reaction delivered %d time(s), %d as a stored event after resubscribing", total, stored)
}

func TestClosedSubscriptionIsReopened(t *testing.T) {
	relay := relaytest.Start(t)
	alice := bottest.NewPerson("alice")
	h := start(t, persona(alice, nil, 0, noteChannel(relay.URL())), []string{relay.URL()})
	r := h.submit(t)
	eventually(t, "the adapter's subscription", subscribed(relay))
	_, reqsBefore := relay.Subscriptions()

	if n := relay.CloseSubscriptions("error: shutting down idle subscriptions"); n == 0 {
		t.Fatalf("no subscription to close")
	}
	eventually(t, "a new REQ after CLOSED", func() bool { open, reqs := relay.Subscriptions(); return open > 0 && reqs > reqsBefore })
	publish(t, relay.URL(), reaction(alice, r.EventID, r.GatewayKey, "✅", time.Now()))
	if got := h.env.Await(t, r.ID); got.Status != bot.Approved {
		t.Fatalf("status = %s, want approved", got.Status)
	}
}

func TestSameReactionViaAllRelaysCountsOnce(t *testing.T) {
	rs := []*relaytest.Relay{relaytest.Start(t), relaytest.Start(t), relaytest.Start(t)}
	alice, bob, carol := bottest.NewPerson("alice"), bottest.NewPerson("bob"), bottest.NewPerson("carol")
	h := start(t, persona(alice, []bottest.Person{bob, carol}, 2, noteChannel(urls(rs...)...)), urls(rs...))
	r := h.submit(t)
	for _, relay := range rs {
		eventually(t, "a subscription on "+relay.URL(), subscribed(relay))
	}

	ev := reaction(bob, r.EventID, r.GatewayKey, "✅", time.Now())
	for _, relay := range rs {
		publish(t, relay.URL(), ev)
	}
	eventually(t, "every relay to deliver bob's reaction", func() bool {
		for _, relay := range rs {
			if n, _ := relay.Deliveries(ev.ID); n == 0 {
				return false
			}
		}
		return true
	})
	eventually(t, "the adapter to handle all three deliveries", func() bool {
		return h.sink.calls("nostr:"+ev.ID)+h.logs.count("duplicate reaction skipped", ev.ID) >= 3
	})
	if n := h.sink.calls("nostr:" + ev.ID); n != 1 {
		t.Errorf("CastVote called %d times for one reaction, want 1", n)
	}
	got := h.get(t, r.ID)
	if len(got.Votes) != 1 || got.Votes[0].Result != bot.Counted || got.Status != bot.Pending {
		t.Fatalf("votes %+v status %s, want one counted vote, pending", got.Votes, got.Status)
	}
}

func TestAgentReactionIgnored(t *testing.T) {
	relay := relaytest.Start(t)
	alice, agent := bottest.NewPerson("alice"), bottest.NewPerson("agent")
	p := persona(alice, nil, 0, noteChannel(relay.URL()))
	p.Agent = []bot.Identity{agent.Identity()}
	h := start(t, p, []string{relay.URL()})
	r := h.submit(t)
	eventually(t, "the adapter's subscription", subscribed(relay))

	publish(t, relay.URL(), reaction(agent, r.EventID, r.GatewayKey, "✅", time.Now()))
	eventually(t, "the agent's vote to be recorded", func() bool { return len(h.get(t, r.ID).Votes) == 1 })
	got := h.get(t, r.ID)
	v := got.Votes[0]
	if got.Status != bot.Pending || v.Result != bot.Ignored || !strings.Contains(v.Why, "agent") {
		t.Fatalf("status %s, vote %+v: want pending and the vote ignored because it is the agent's", got.Status, v)
	}
}

func TestForgedEventsFromRelayDropped(t *testing.T) {
	relay := relaytest.Start(t)
	alice := bottest.NewPerson("alice")
	h := start(t, persona(alice, nil, 0, noteChannel(relay.URL())), []string{relay.URL()})
	r := h.submit(t)
	eventually(t, "the adapter's subscription", subscribed(relay))

	// One clock reading for both: with two, genuine and badID could fall in
	// the same second, badID would then be genuine itself, and count.
	now := time.Now()
	genuine := reaction(alice, r.EventID, r.GatewayKey, "✅", now)
	badSig := genuine
	badSig.Sig = strings.Repeat("ab", 64)
	badID := reaction(alice, r.EventID, r.GatewayKey, "✅", now.Add(-time.Second))
	badID.ID = genuine.ID // a valid signature, over other content than the id says
	mallory := bottest.NewPerson("mallory")
	alienSig := reaction(mallory, r.EventID, r.GatewayKey, "✅", time.Now())
	alienSig.PubKey = alice.Key.PublicKey() // mallory's signature, alice's name
	for _, forged := range []gonostr.Event{badSig, badID, alienSig} {
		if n := relay.Inject(mustJSON(forged)); n == 0 {
			t.Fatalf("no subscription took the injected event")
		}
	}
	eventually(t, "three dropped reactions logged", func() bool {
		return h.logs.count("reaction dropped") >= 3
	})
	if n := h.sink.total(); n != 0 {
		t.Fatalf("%d forged ballots reached the gateway", n)
	}
	if got := h.get(t, r.ID); got.Status != bot.Pending || len(got.Votes) != 0 {
		t.Fatalf("after forgeries: status %s, %d votes; want pending and none", got.Status, len(got.Votes))
	}

	// A forged copy must not shadow the genuine event with the same id.
	publish(t, relay.URL(), genuine)
	if got := h.env.Await(t, r.ID); got.Status != bot.Approved {
		t.Fatalf("status = %s, want approved by the genuine reaction", got.Status)
	}
}

func TestOtherEmojiRecordedIgnored(t *testing.T) {
	relay := relaytest.Start(t)
	alice := bottest.NewPerson("alice")
	h := start(t, persona(alice, nil, 0, noteChannel(relay.URL())), []string{relay.URL()})
	r := h.submit(t)
	eventually(t, "the adapter's subscription", subscribed(relay))

	publish(t, relay.URL(), reaction(alice, r.EventID, r.GatewayKey, "🎉", time.Now()))
	eventually(t, "the 🎉 to be recorded", func() bool { return len(h.get(t, r.ID).Votes) == 1 })
	got := h.get(t, r.ID)
	if v := got.Votes[0]; v.Choice != bot.Other || v.Result != bot.Ignored || got.Status != bot.Pending {
		t.Fatalf("vote %+v status %s: want other, ignored, pending", v, got.Status)
	}
}

func TestDeletionDoesNotUndoVote(t *testing.T) {
	relay := relaytest.Start(t)
	alice, bob, carol := bottest.NewPerson("alice"), bottest.NewPerson("bob"), bottest.NewPerson("carol")
	h := start(t, persona(alice, []bottest.Person{bob, carol}, 2, noteChannel(relay.URL())), []string{relay.URL()})
	r := h.submit(t)
	eventually(t, "the adapter's subscription", subscribed(relay))

	bobs := reaction(bob, r.EventID, r.GatewayKey, "✅", time.Now())
	publish(t, relay.URL(), bobs)
	eventually(t, "bob's vote", func() bool { return len(h.get(t, r.ID).Votes) == 1 })
	deletion := func(p bottest.Person, id string) gonostr.Event {
		ev := gonostr.Event{Kind: gonostr.KindDeletion, CreatedAt: gonostr.Now(), Content: "changed my mind",
			Tags: gonostr.Tags{{"e", id}, {"k", "7"}}}
		if err := p.Key.Sign(&ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	publish(t, relay.URL(), deletion(bob, bobs.ID))
	if n := len(relay.Events(gonostr.Filter{IDs: []string{bobs.ID}})); n != 0 {
		t.Fatalf("the relay still holds bob's reaction after his deletion")
	}

	carols := reaction(carol, r.EventID, r.GatewayKey, "✅", time.Now())
	publish(t, relay.URL(), carols)
	got := h.env.Await(t, r.ID)
	if got.Status != bot.Approved || len(got.DecidedBy) != 2 {
		t.Fatalf("status %s by %v, want approved by bob and carol: a deletion does not retract", got.Status, got.DecidedBy)
	}
	publish(t, relay.URL(), deletion(carol, carols.ID))
	eventually(t, "the relay to apply carol's deletion", func() bool {
		return len(relay.Events(gonostr.Filter{IDs: []string{carols.ID}})) == 0
	})
	if got := h.get(t, r.ID); got.Status != bot.Approved {
		t.Fatalf("after deletion: %s, want still approved", got.Status)
	}
	if n := h.sink.total(); n != 2 {
		t.Errorf("%d ballots reached the gateway, want 2 (deletions are not votes)", n)
	}
}

func TestReplyOnDecisionAndUnsubscribe(t *testing.T) {
	relay := relaytest.Start(t)
	alice := bottest.NewPerson("alice")
	h := start(t, persona(alice, nil, 0, noteChannel(relay.URL())), []string{relay.URL()})
	r := h.submit(t)
	eventually(t, "the adapter's subscription", subscribed(relay))

	publish(t, relay.URL(), reaction(alice, r.EventID, r.GatewayKey, "❌", time.Now()))
	got := h.env.Await(t, r.ID)
	if got.Status != bot.Denied {
		t.Fatalf("status = %s, want denied", got.Status)
	}
	want := bot.Outcome(got)
	var reply gonostr.Event
	eventually(t, "the outcome reply on the relay", func() bool {
		evs := relay.Events(gonostr.Filter{Kinds: []int{gonostr.KindTextNote}, Authors: []string{r.GatewayKey},
			Tags: gonostr.TagMap{"e": {r.EventID}}})
		if len(evs) == 1 {
			reply = evs[0]
		}
		return len(evs) == 1
	})
	if !strings.Contains(reply.Content, want) || !strings.Contains(reply.Content, "❌ denied by alice") {
		t.Errorf("reply content %q does not state %q", reply.Content, want)
	}
	if e := reply.Tags.GetFirst([]string{"e", r.EventID}); e == nil || len(*e) < 4 || (*e)[3] != "root" {
		t.Errorf("reply e tag %v, want a NIP-10 root marker", e)
	}
	eventually(t, "the adapter to unsubscribe", func() bool { open, _ := relay.Subscriptions(); return open == 0 })
}

func TestNIP28ChannelMessage(t *testing.T) {
	relay := relaytest.Start(t)
	alice := bottest.NewPerson("alice")
	channel := gonostr.Event{Kind: gonostr.KindChannelCreation, CreatedAt: gonostr.Now(), Content: `{"name":"ops approvals"}`}
	if err := alice.Key.Sign(&channel); err != nil {
		t.Fatal(err)
	}
	publish(t, relay.URL(), channel)
	c := bot.ChannelConfig{Platform: bot.Nostr, Relays: []string{relay.URL()}, Mode: "nip28", Root: channel.ID}
	h := start(t, persona(alice, nil, 0, c), []string{relay.URL()})
	r := h.submit(t)

	msgs := relay.Events(gonostr.Filter{Kinds: []int{gonostr.KindChannelMessage}, Tags: gonostr.TagMap{"signoff": {r.ID}}})
	if len(msgs) != 1 {
		t.Fatalf("relay holds %d kind-42 messages for the request, want 1", len(msgs))
	}
	msg := msgs[0]
	if root := msg.Tags.GetFirst([]string{"e", channel.ID}); root == nil || len(*root) < 4 || (*root)[3] != "root" {
		t.Errorf("kind 42 e tag %v, want the channel root", root)
	}
	if msg.PubKey != h.env.Key.PublicKey() || !msg.Tags.ContainsAny("p", []string{alice.Key.PublicKey()}) {
		t.Errorf("kind 42 by %s with tags %v: want the gateway's, tagging alice", msg.PubKey, msg.Tags)
	}
	if !slices.ContainsFunc(r.Messages, func(m bot.MessageRef) bool { return m.Platform == bot.Nostr && m.ID == msg.ID }) {
		t.Fatalf("request messages %v do not name the kind-42 event %s", r.Messages, msg.ID)
	}
	if len(relay.Events(gonostr.Filter{IDs: []string{r.EventID}})) != 0 {
		t.Errorf("nip28 mode also published the kind-1 note")
	}

	publish(t, relay.URL(), reaction(alice, msg.ID, r.GatewayKey, "✅", time.Now()))
	got := h.env.Await(t, r.ID)
	if got.Status != bot.Approved {
		t.Fatalf("status = %s (%s), want approved by the reaction to the kind-42 message", got.Status, got.DecisionReason)
	}
	eventually(t, "the kind-42 outcome reply", func() bool {
		for _, ev := range relay.Events(gonostr.Filter{Kinds: []int{gonostr.KindChannelMessage}, Tags: gonostr.TagMap{"e": {msg.ID}}}) {
			reply := ev.Tags.GetFirst([]string{"e", msg.ID})
			root := ev.Tags.GetFirst([]string{"e", channel.ID})
			if reply != nil && len(*reply) >= 4 && (*reply)[3] == "reply" && root != nil && strings.Contains(ev.Content, "✅ approved by alice") {
				return true
			}
		}
		return false
	})
}

func TestNIP29GroupMessage(t *testing.T) {
	relay := relaytest.Start(t)
	alice := bottest.NewPerson("alice")
	c := bot.ChannelConfig{Platform: bot.Nostr, Relays: []string{relay.URL()}, Mode: "nip29", Group: "ops"}
	h := start(t, persona(alice, nil, 0, c), []string{relay.URL()})
	r := h.submit(t)

	msgs := relay.Events(gonostr.Filter{Kinds: []int{gonostr.KindSimpleGroupChatMessage}, Tags: gonostr.TagMap{"h": {"ops"}, "signoff": {r.ID}}})
	if len(msgs) != 1 {
		t.Fatalf("relay holds %d group messages for the request, want 1", len(msgs))
	}
	publish(t, relay.URL(), reaction(alice, msgs[0].ID, r.GatewayKey, "-", time.Now()))
	if got := h.env.Await(t, r.ID); got.Status != bot.Denied {
		t.Fatalf("status = %s, want denied", got.Status)
	}
	eventually(t, "the group outcome reply", func() bool {
		return len(relay.Events(gonostr.Filter{Kinds: []int{gonostr.KindSimpleGroupChatMessage},
			Tags: gonostr.TagMap{"h": {"ops"}, "e": {msgs[0].ID}}})) == 1
	})
}

func TestPendingResubscribedOnStart(t *testing.T) {
	relay := relaytest.Start(t)
	alice := bottest.NewPerson("alice")
	h := start(t, persona(alice, nil, 0, noteChannel(relay.URL())), []string{relay.URL()})
	r := h.submit(t)
	h.stop() // the gateway restarts its Nostr side
	eventually(t, "the first adapter to unsubscribe", func() bool { open, _ := relay.Subscriptions(); return open == 0 })

	logs := &logRecorder{}
	a2, _ := runAdapter(t, h.env, h.env.Gateway, logs, []string{relay.URL()})
	h.env.Gateway.Channels = map[bot.Platform]bot.Channel{bot.Nostr: a2}
	eventually(t, "the new adapter to subscribe to the pending request", subscribed(relay))
	publish(t, relay.URL(), reaction(alice, r.EventID, r.GatewayKey, "✅", time.Now()))
	if got := h.env.Await(t, r.ID); got.Status != bot.Approved {
		t.Fatalf("status = %s, want approved after the restart", got.Status)
	}
	// The new adapter never posted it, so it replies under the request's
	// own event on every relay it knows.
	eventually(t, "the outcome reply from the new adapter", func() bool {
		return len(relay.Events(gonostr.Filter{Kinds: []int{gonostr.KindTextNote}, Authors: []string{r.GatewayKey},
			Tags: gonostr.TagMap{"e": {r.EventID}}})) == 1
	})
}

func TestPublishEvent(t *testing.T) {
	up, refusing, down := relaytest.Start(t), relaytest.Start(t), relaytest.Start(t)
	refusing.Refuse(func(*gonostr.Event) string { return "rate-limited: slow down" })
	down.Stop()
	alice := bottest.NewPerson("alice")
	ev := reaction(alice, strings.Repeat("0", 64), alice.Key.PublicKey(), "✅", time.Now())
	raw := json.RawMessage(mustJSON(ev))
	ctx := context.Background()

	accepted, err := nostr.PublishEvent(ctx, urls(up, refusing, down), raw)
	if err != nil || !slices.Equal(accepted, []string{up.URL()}) {
		t.Fatalf("PublishEvent = %v, %v; want only %s", accepted, err, up.URL())
	}
	if len(up.Events(gonostr.Filter{IDs: []string{ev.ID}})) != 1 {
		t.Errorf("the relay does not hold the event")
	}
	if _, err := nostr.PublishEvent(ctx, urls(refusing, down), raw); err == nil || !strings.Contains(err.Error(), "rate-limited") {
		t.Errorf("no relay accepting: err = %v, want one naming the refusal", err)
	}
	bad := ev
	bad.Content = "❌"
	if _, err := nostr.PublishEvent(ctx, urls(up), mustJSON(bad)); err == nil {
		t.Errorf("a tampered event was published")
	}
	if _, err := nostr.PublishEvent(ctx, []string{"https://relay.example"}, raw); err == nil {
		t.Errorf("an https relay URL was accepted")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	sink := &countingSink{}
	for name, cfg := range map[string]nostr.Config{
		"no key":    {Relays: []string{"ws://127.0.0.1:1"}},
		"http url":  {Key: bottest.NewPerson("g").Key, Relays: []string{"http://relay.example"}},
		"bare host": {Key: bottest.NewPerson("g").Key, Relays: []string{"relay.example"}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := nostr.New(cfg, sink); err == nil {
				t.Fatalf("New accepted %+v", cfg)
			}
		})
	}
}
