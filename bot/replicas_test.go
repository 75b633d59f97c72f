package bot_test

import (
	"context"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// TestReplicasShareOneStore runs three gateways on one store: a request
// submitted on one, voted on through another, wakes a waiter on the third;
// expiries are swept by all of them and handled once.
func TestReplicasShareOneStore(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			alice := bottest.NewPerson("alice")
			p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Minute}
			srv := bottest.Start(t, backend)
			a := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
			b := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
			c := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
			ctx := context.Background()

			r := a.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform apply"})
			woke := make(chan *bot.Request, 1)
			go func() {
				got, err := c.Gateway.Wait(ctx, r.ID, 30*time.Second)
				if err != nil {
					t.Error(err)
				}
				woke <- got
			}()
			for c.Gateway.Waiting() == 0 {
				time.Sleep(time.Millisecond)
			}
			if out := b.React(t, alice, r, "✅"); !out.Decided {
				t.Fatalf("vote through replica b = %+v, want it to decide", out)
			}
			select {
			case got := <-woke:
				if got.Status != bot.Approved {
					t.Fatalf("waiter on replica c got %s, want approved", got.Status)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("waiter on replica c not woken 10s after the decision on replica b")
			}

			// 30 requests expire while three sweepers race: each is decided
			// once, and exactly one decision record exists across the logs.
			var ids []string
			for range 30 {
				ids = append(ids, a.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy", Timeout: bot.Duration(100 * time.Millisecond)}).ID)
			}
			var wg sync.WaitGroup
			for _, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if got := b.Await(t, id); got.Status != bot.Expired {
						t.Errorf("%s: %s, want expired", id, got.Status)
					}
				}()
			}
			wg.Wait()
			// The decision records are written by whichever replica won;
			// give the follow-ups a moment to land before counting.
			deadline := time.Now().Add(10 * time.Second)
			for {
				n := 0
				for _, rec := range a.Chain(t) { // one chain for all replicas
					if rec.Type == "decision" {
						n++
					}
				}
				if n == len(ids)+1 {
					break
				}
				if n > len(ids)+1 || time.Now().After(deadline) {
					t.Fatalf("%d decision records across replicas, want %d", n, len(ids)+1)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestWaitersLookAgainAfterResubscribe: when the decision subscription
// is cut and re-established, waiters are woken to look again, since
// decisions published meanwhile were missed. Needs a redis-server of its
// own (CLIENT KILL cuts every subscription on the server).
func TestWaitersLookAgainAfterResubscribe(t *testing.T) {
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Minute}
	srv := bottest.StartPrivate(t)
	env := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
	ctx := context.Background()
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
	woke := make(chan time.Time, 1)
	go func() {
		env.Gateway.Wait(ctx, r.ID, 30*time.Second)
		woke <- time.Now()
	}()
	for env.Gateway.Waiting() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := srv.Client(t).Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woke:
	case <-time.After(15 * time.Second):
		t.Fatal("waiter not woken after the subscription was re-established")
	}
	// The log says why the waiter was answered: a resubscription woke it.
	if !regexp.MustCompile(`msg="decision watch: subscribed; every waiter looks again" confirmations=([2-9]|[1-9][0-9]+) waiters=1`).MatchString(env.Logs()) {
		t.Errorf("the log does not tell of the resubscription that woke the waiter:\n%s", env.Logs())
	}
}
