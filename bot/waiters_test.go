package bot_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// TestTenThousandWaitersOneSubscription holds 10,000 waiters on one
// gateway and checks they share one Redis subscription and all wake when
// their requests are decided.
func TestTenThousandWaitersOneSubscription(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 waiters")
	}
	alice := bot.Identity{Platform: bot.Slack, ID: "U0ALICE"}
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice}}, DenyQuorum: 1, Timeout: time.Hour}
	env := bottest.New(t, p, nil)
	ctx := context.Background()

	requests, perRequest := 1000, 10
	if raceEnabled {
		// 10,000 waiters under -race took 4–6 minutes on two loaded cores
		// (and starved the seals into denials): the race run checks the
		// same sharing with 1,000; the full 10,000 run without -race.
		requests = 100
		t.Logf("-race: %d waiters instead of 10,000", requests*perRequest)
	}
	reqs := make([]*bot.Request, requests)
	for i := range reqs {
		reqs[i] = env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
	}
	var wg sync.WaitGroup
	var early atomic.Int64
	results := make(chan bot.Status, requests*perRequest)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for _, r := range reqs {
		for range perRequest {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A wait may return pending before the decision: the
				// subscription was re-established (a Redis blip, or a
				// health-check ping late under -race on a loaded machine:
				// every waiter looks again) — so waiters loop, as every
				// real client does.
				for {
					got, err := env.Gateway.Wait(wctx, r.ID, time.Minute)
					if err != nil {
						t.Error(err)
						return
					}
					if got.Status.Final() {
						results <- got.Status
						return
					}
					early.Add(1)
				}
			}()
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for env.Gateway.Waiting() < requests*perRequest {
		if time.Now().After(deadline) {
			t.Fatalf("only %d waiters registered", env.Gateway.Waiting())
		}
		time.Sleep(5 * time.Millisecond)
	}
	subs, err := env.Redis.PubSubNumSub(ctx, env.Store.DecisionChannel()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n := subs[env.Store.DecisionChannel()]; n != 1 {
		t.Fatalf("%d subscriptions for %d waiters, want 1", n, env.Gateway.Waiting())
	}
	// Platform-vouched votes: no signatures to make, so the test measures
	// waiting, not crypto.
	for _, r := range reqs {
		out, err := env.Gateway.CastVote(ctx, bot.Ballot{RequestID: r.ID, Voter: alice, Choice: bot.Approve, Proof: bot.ProofPlatform, DedupKey: "vote:" + r.ID})
		if err != nil || !out.Decided {
			t.Fatalf("vote on %s = %+v, %v; want it to decide", r.ID, out, err)
		}
	}
	wg.Wait()
	close(results)
	if n := early.Load(); n > 0 {
		t.Logf("%d waits returned pending before their decision (subscription re-established) and waited again", n)
	}
	n := 0
	for st := range results {
		if st != bot.Approved {
			t.Fatalf("a waiter woke with %s, want approved", st)
		}
		n++
	}
	if n != requests*perRequest {
		t.Fatalf("%d waiters answered, want %d", n, requests*perRequest)
	}
}
