package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/console"
)

// next returns the next update on s, failing after 5s.
func next(t *testing.T, s *console.Sub) console.Update {
	t.Helper()
	select {
	case u, ok := <-s.C:
		if !ok {
			t.Fatal("the feed cut the page off")
		}
		return u
	case <-time.After(5 * time.Second):
		t.Fatal("no update within 5s")
	}
	return console.Update{}
}

// A page following the feed hears a request as it is created and as it
// is decided, from the real store's notices; the feed follows the store
// only while someone follows it.
func TestFeedTellsCreationAndDecision(t *testing.T) {
	alice := bottest.NewPerson("alice")
	env := bottest.New(t, bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, Timeout: time.Minute}, nil)
	f := &console.Feed{Get: env.Gateway.Get, Follow: console.FollowAll(env.Store.WatchCreated, env.Store.Watch)}
	t.Cleanup(f.Close)
	ctx := context.Background()
	for round := range 2 { // the second after every page left: following starts again
		s, err := f.Subscribe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "rm -rf /srv"})
		u := next(t, s)
		for u.Request == nil || u.Request.ID != r.ID {
			u = next(t, s)
		}
		if u.Request.Status != bot.Pending {
			t.Fatalf("round %d: first heard %s, want pending", round, u.Request.Status)
		}
		env.React(t, alice, r, "✅")
		for u.Request == nil || u.Request.ID != r.ID || u.Request.Status == bot.Pending {
			u = next(t, s)
		}
		if u.Request.Status != bot.Approved || u.Request.Electorate == nil && len(u.Request.Votes) != 1 {
			t.Fatalf("round %d: heard %+v, want approved with alice's vote", round, u.Request)
		}
		f.Unsubscribe(s)
		if _, ok := <-s.C; ok {
			t.Fatal("an unsubscribed page still hears")
		}
		if n := f.Followers(); n != 0 {
			t.Fatalf("%d followers after the page left", n)
		}
	}
}

// A page that stops reading is cut off, not waited for: the others go on.
func TestFeedCutsOffAPageThatFellBehind(t *testing.T) {
	alice := bottest.NewPerson("alice")
	env := bottest.New(t, bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, Timeout: time.Minute}, nil)
	f := &console.Feed{Get: env.Gateway.Get, Follow: console.FollowAll(env.Store.WatchCreated, env.Store.Watch)}
	t.Cleanup(f.Close)
	slow, err := f.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Unsubscribe(slow)
	for range console.SubBuffer + 10 {
		env.Submit(t, bot.NewRequest{Persona: "demo", Action: "rm -rf /srv"})
	}
	// It read nothing: once the feed has told more than its buffer, it
	// is no longer a follower, and its channel ends after what it holds.
	deadline := time.Now().Add(20 * time.Second)
	for f.Followers() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a page that never read was not cut off")
		}
		time.Sleep(5 * time.Millisecond)
	}
	n := 0
	for range slow.C {
		n++
	}
	if n != console.SubBuffer {
		t.Fatalf("the cut-off page held %d updates, want its buffer of %d", n, console.SubBuffer)
	}
}
