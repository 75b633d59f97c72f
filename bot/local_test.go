package bot_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// TestLocalDecisionIsNotRacedByItsOwnEchoes: the step that decides
// publishes a change notice and enqueues the decision in the outbox. On
// the gateway that tallied the vote, neither may start work on the
// decision while it is being sealed there: the waiter is woken once the
// receipt is saved (one read of the request, not one before the seal and
// one after), and the outbox's consumer audits and seals nothing a second
// time. Counted in Redis commands from the vote to the outbox's ack.
func TestLocalDecisionIsNotRacedByItsOwnEchoes(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			rdb := srv.Client(t)
			log := &bottest.Commands{Tag: bottest.TagListReads}
			rdb.AddHook(log)
			owner := bottest.NewPerson("alice")
			p := bot.Persona{Name: "p", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{owner.Identity()}}, DenyQuorum: 1, Timeout: time.Hour}
			env := bottest.NewOn(t, rdb, srv.Prefix, p, nil)
			for i := range 5 {
				r := env.Submit(t, bot.NewRequest{Persona: "p", Action: fmt.Sprint("deploy ", i), Nonce: bot.NewNonce()})
				answered := make(chan *bot.Request, 1)
				ctx := context.Background()
				if _, w, err := env.Gateway.WaitFunc(ctx, r.ID, 10*time.Second, -1, func(r *bot.Request, err error) {
					if err != nil {
						t.Errorf("wait: %v", err)
					}
					answered <- r
				}); err != nil || w == nil {
					t.Fatalf("wait on %s: %v (waiter %v)", r.ID, err, w)
				}
				log.Reset()
				if out := env.React(t, owner, r, "✅"); out.Status != bot.Approved {
					t.Fatalf("vote: %+v", out)
				}
				select {
				case got := <-answered:
					if got == nil || got.Status != bot.Approved || len(got.Receipt) == 0 {
						t.Fatalf("waiter answered %+v, want approved with its receipt", got)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the waiter was not answered")
				}
				deadline := time.Now().Add(10 * time.Second)
				for rdb.XLen(ctx, srv.Prefix+":{outbox}").Val() != 0 {
					if time.Now().After(deadline) {
						t.Fatal("the decision's outbox entry was never delivered")
					}
					time.Sleep(5 * time.Millisecond)
				}
				// One read of the request to seal it, one by the waiter once
				// sealed, one by the outbox delivery; one EVALSHA to tally,
				// one to append the decision's record, one to save the
				// receipt, one by the delivery finding the record done.
				if n := log.Count("HMGET", r.ID); n > 3 || n == 0 {
					t.Errorf("decision %d: %d reads of the request (HMGET), want 3: %v", i, n, log)
				}
				if n := log.Count("EVALSHA", ""); n > 4 {
					t.Errorf("decision %d: %d scripts run, want 4: %v", i, n, log)
				}
			}
		})
	}
}

// TestPendingVoteIsOneRoundTrip: a vote that leaves its request pending
// is tallied, audited and announced to every replica's waiters in one
// script: no PUBLISH of its own after it. A waiter on another replica
// sharing the store still sees the vote at once.
func TestPendingVoteIsOneRoundTrip(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			p, people := committee(3)
			srv := bottest.Start(t, backend)
			rdb := srv.Client(t)
			log := &bottest.Commands{Tag: bottest.TagListReads}
			rdb.AddHook(log)
			here := bottest.NewOn(t, rdb, srv.Prefix, p, nil)
			there := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
			r := here.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy", Nonce: bot.NewNonce()})
			for i, m := range people[:2] {
				answered := make(chan *bot.Request, 1)
				if _, w, err := there.Gateway.WaitFunc(context.Background(), r.ID, 10*time.Second, -1, func(r *bot.Request, err error) {
					if err != nil {
						t.Errorf("wait: %v", err)
					}
					answered <- r
				}); err != nil || w == nil {
					t.Fatalf("wait on %s: %v (waiter %v)", r.ID, err, w)
				}
				log.Reset()
				if out := here.React(t, m, r, "✅"); out.Result != bot.Counted || out.Decided {
					t.Fatalf("vote %d: %+v, want counted, pending", i, out)
				}
				if n := log.Count("PUBLISH", ""); n != 0 {
					t.Errorf("vote %d: %d PUBLISH commands after the vote's script, want 0 (the script announces it): %v", i, n, log)
				}
				select {
				case got := <-answered:
					if got == nil || got.Status != bot.Pending || len(got.Votes) != i+1 {
						t.Fatalf("the other replica's waiter saw %+v, want pending with %d votes", got, i+1)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("vote %d: the other replica's waiter was not answered", i)
				}
			}
		})
	}
}

// TestFinalChannelCarriesDecisionsOnly: WatchFinal, which the network
// policy service follows, sees each decision once — by vote, and by the
// step that decides without one (a withdrawal here; an expiry is the same
// script) — and neither a vote that left its request pending nor a
// decision's seal.
func TestFinalChannelCarriesDecisionsOnly(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			p, people := committee(2)
			srv := bottest.Start(t, backend)
			env := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			final := make(chan string, 64)
			ready := make(chan struct{})
			go env.Store.WatchFinal(ctx, func(id string) {
				if id == "" {
					close(ready)
					return
				}
				final <- id
			})
			<-ready
			voted := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy 1", Nonce: bot.NewNonce()})
			for _, m := range people {
				env.React(t, m, voted, "✅")
			}
			env.Await(t, voted.ID)
			withdrawn := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy 2", Nonce: bot.NewNonce()})
			env.React(t, people[0], withdrawn, "✅")
			if _, err := env.Gateway.Withdraw(ctx, withdrawn.ID, "changed my mind"); err != nil {
				t.Fatal(err)
			}
			var got []string
			timeout := time.After(10 * time.Second)
			for len(got) < 2 {
				select {
				case id := <-final:
					got = append(got, id)
				case <-timeout:
					t.Fatalf("final channel carried %v, want %s then %s", got, voted.ID, withdrawn.ID)
				}
			}
			select {
			case id := <-final:
				got = append(got, id)
			case <-time.After(300 * time.Millisecond):
			}
			if want := []string{voted.ID, withdrawn.ID}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("final channel carried %v, want %v (each decision once, nothing else)", got, want)
			}
		})
	}
}

// TestOutboxDoesNotWaitForHeldProgress: a vote that left its request
// pending holds its waiters' progress for ProgressHold after its answer,
// but its work is done: the outbox's delivery of the decision that
// follows waits for that decision's seal alone, not for the earlier
// vote's hold (here an hour; the delivery waited up to localWaitMax, 10 s).
func TestOutboxDoesNotWaitForHeldProgress(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			rdb := srv.Client(t)
			p, people := committee(2)
			env := bottest.NewOn(t, rdb, srv.Prefix, p, nil)
			env.Gateway.ProgressHold = time.Hour
			r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform apply", Nonce: bot.NewNonce()})
			for i, want := range []bool{false, true} {
				ctx, later := bot.WithAfterResponse(context.Background())
				out, err := env.Gateway.CastVote(ctx, ballot(t, people[i], r))
				later.Run()
				if err != nil || out.Decided != want {
					t.Fatalf("vote %d = %+v, %v; want decided %v", i+1, out, err, want)
				}
			}
			decided := time.Now()
			ctx := context.Background()
			for rdb.XLen(ctx, srv.Prefix+":{outbox}").Val() != 0 {
				if since := time.Since(decided); since > 5*time.Second {
					t.Fatalf("the decision's outbox entry was not delivered %v after it: its delivery waits for the first vote's held progress", since)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
