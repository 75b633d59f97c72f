package bot_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

func waitFuncEnv(t *testing.T) (*bottest.Env, bot.Identity) {
	alice := bot.Identity{Platform: bot.Slack, ID: "U0ALICE"}
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice}}, DenyQuorum: 1, Timeout: time.Hour}
	return bottest.New(t, p, nil), alice
}

func approve(t *testing.T, env *bottest.Env, alice bot.Identity, r *bot.Request) {
	t.Helper()
	out, err := env.Gateway.CastVote(context.Background(), bot.Ballot{RequestID: r.ID, Voter: alice, Choice: bot.Approve, Proof: bot.ProofPlatform, DedupKey: "vote:" + r.ID})
	if err != nil || !out.Decided {
		t.Fatalf("vote = %+v, %v; want it to decide", out, err)
	}
}

// Parked waiters (no goroutine each) are each answered once, approved,
// when their requests are decided, and leave the hub.
func TestWaitFuncAnswersEachWaiterOnce(t *testing.T) {
	env, alice := waitFuncEnv(t)
	ctx := context.Background()
	const n = 20
	reqs := make([]*bot.Request, n)
	calls := make(chan bot.Status, 3*n)
	for i := range reqs {
		reqs[i] = env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
		for range 2 { // two waiters on each
			if _, w, err := env.Gateway.WaitFunc(ctx, reqs[i].ID, time.Minute, -1, func(r *bot.Request, err error) {
				if err != nil {
					t.Error(err)
				}
				calls <- r.Status
			}); w == nil || err != nil {
				t.Fatalf("WaitFunc answered at once: %v", err)
			}
		}
	}
	if got := env.Gateway.Waiting(); got != 2*n {
		t.Fatalf("Waiting() = %d, want %d", got, 2*n)
	}
	for _, r := range reqs {
		approve(t, env, alice, r)
	}
	for range 2 * n {
		select {
		case st := <-calls:
			if st != bot.Approved {
				t.Fatalf("a waiter was answered %s, want approved", st)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("not every parked waiter was answered within 30s")
		}
	}
	// A request already decided is answered at once, not parked.
	if r, w, err := env.Gateway.WaitFunc(ctx, reqs[0].ID, time.Minute, -1, func(*bot.Request, error) { t.Error("done called for an answer given at once") }); w != nil || err != nil || r.Status != bot.Approved {
		t.Fatalf("WaitFunc on a decided request = %v, %v, %v; want it approved at once", r, w, err)
	}
	select {
	case st := <-calls:
		t.Fatalf("a waiter was answered twice (%s)", st)
	case <-time.After(100 * time.Millisecond):
	}
	if got := env.Gateway.Waiting(); got != 0 {
		t.Fatalf("Waiting() = %d after every answer, want 0", got)
	}
}

// A stopped waiter is never answered; one whose time runs out is answered
// with the request as it stands.
func TestWaitFuncStopAndTimeout(t *testing.T) {
	env, alice := waitFuncEnv(t)
	ctx := context.Background()
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
	var stoppedCalled atomic.Bool
	_, stopped, _ := env.Gateway.WaitFunc(ctx, r.ID, time.Minute, -1, func(*bot.Request, error) { stoppedCalled.Store(true) })
	timedOut := make(chan *bot.Request, 1)
	_, w, _ := env.Gateway.WaitFunc(ctx, r.ID, 50*time.Millisecond, -1, func(got *bot.Request, err error) { timedOut <- got })
	if stopped == nil || w == nil {
		t.Fatal("WaitFunc answered a pending request at once")
	}
	if !stopped.Stop() {
		t.Fatal("Stop of a parked waiter = false")
	}
	select {
	case got := <-timedOut:
		if got == nil || got.Status != bot.Pending {
			t.Fatalf("timed-out waiter got %+v, want the pending request", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a 50ms wait was not answered in 10s")
	}
	if w.Stop() {
		t.Fatal("Stop after the answer = true, want false")
	}
	approve(t, env, alice, r)
	env.Await(t, r.ID) // the decision's wake has gone round
	if stoppedCalled.Load() {
		t.Fatal("a stopped waiter was answered")
	}
	if got := env.Gateway.Waiting(); got != 0 {
		t.Fatalf("Waiting() = %d, want 0", got)
	}
}

// TestWaitSeenIgnoresNewsItHasSeen: a wait that says what its caller has
// seen (WaitFunc's seen) is parked when nothing changed since, is not
// answered by a late notice of a change its caller has already seen, and
// is answered by the next real one.
func TestWaitSeenIgnoresNewsItHasSeen(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			rdb := srv.Client(t)
			log := &bottest.Commands{Tag: bottest.TagListReads}
			rdb.AddHook(log)
			alice := bottest.NewPerson("alice")
			p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Hour}
			env := bottest.NewOn(t, rdb, srv.Prefix, p, nil)
			r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy", Nonce: bot.NewNonce()})
			env.React(t, bottest.NewPerson("mallory"), r, "✅") // stored, ignored
			ctx := context.Background()
			cur, err := env.Store.Get(ctx, r.ID)
			if err != nil || cur.Seen != 1 {
				t.Fatalf("Get = %+v, %v; want Seen 1", cur, err)
			}
			if got, _, err := env.Gateway.WaitFunc(ctx, r.ID, time.Minute, 0, func(*bot.Request, error) {}); err != nil || got == nil || len(got.Votes) != 1 {
				t.Fatalf("a wait that saw 0 answers = %+v, %v; want answered at once with 1", got, err)
			}
			answered := make(chan *bot.Request, 2)
			log.Reset()
			_, w, err := env.Gateway.WaitFunc(ctx, r.ID, time.Minute, cur.Seen, func(r *bot.Request, err error) { answered <- r })
			if err != nil || w == nil {
				t.Fatalf("a wait that saw all = answered at once (%v); want parked", err)
			}
			if n := log.Count("LRANGE", ""); n != 0 {
				t.Errorf("parking a wait that saw all read the request (%d LRANGE): %v", n, log)
			}
			// A late notice of the change it saw: looked at, not answered.
			if err := env.Store.Changed(ctx, r.ID); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for log.Count("LRANGE", r.ID) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the notice did not wake the waiter")
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // what the look does next, if anything
			select {
			case got := <-answered:
				t.Fatalf("a notice of nothing new answered the wait: %s with %d answers", got.Status, len(got.Votes))
			default:
			}
			if n := env.Gateway.Waiting(); n != 1 {
				t.Fatalf("%d waiting after the late notice, want 1", n)
			}
			env.React(t, bottest.NewPerson("trudy"), r, "✅")
			select {
			case got := <-answered:
				if got == nil || len(got.Votes) != 2 {
					t.Fatalf("answered %+v, want 2 answers", got)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the next change did not answer the wait")
			}
		})
	}
}
