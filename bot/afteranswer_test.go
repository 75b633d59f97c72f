package bot_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// TestWaitersOfACountedVoteAreWokenAfterItsAnswer: a vote that leaves its
// request pending wakes this gateway's waiters on it once the voter's
// answer is sent (the HTTP API runs the vote's AfterResponse then), not
// while it is being written; with no AfterResponse they are woken at once.
func TestWaitersOfACountedVoteAreWokenAfterItsAnswer(t *testing.T) {
	p, people := committee(2)
	env := bottest.New(t, p, nil)
	for _, withAfter := range []bool{true, false} {
		retryIfResubscribed(t, env.Gateway, func() string {
			r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform apply"})
			answered := make(chan *bot.Request, 1)
			if got, _, err := env.Gateway.WaitFunc(context.Background(), r.ID, time.Minute, r.Seen, func(r *bot.Request, err error) { answered <- r }); err != nil || got != nil {
				t.Fatalf("wait = %+v, %v; want parked", got, err)
			}
			ctx, later := context.Background(), (*bot.AfterResponse)(nil)
			if withAfter {
				ctx, later = bot.WithAfterResponse(ctx)
			}
			out, err := env.Gateway.CastVote(ctx, ballot(t, people[0], r))
			if err != nil || out.Result != bot.Counted || out.Decided {
				t.Fatalf("first of two approvals = %+v, %v; want counted, pending", out, err)
			}
			if withAfter {
				select {
				case got := <-answered:
					later.Run()
					return fmt.Sprintf("the waiter was answered (%d votes) before the voter's answer was sent", len(got.Votes))
				case <-time.After(300 * time.Millisecond):
				}
				later.Run()
			}
			select {
			case got := <-answered:
				if got == nil || len(got.Votes) != 1 {
					t.Fatalf("the waiter's answer = %+v, want the request with its vote", got)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("the waiter was not answered (AfterResponse %v)", withAfter)
			}
			return ""
		})
	}
}

// retryIfResubscribed runs try, which returns what went wrong with a
// waiter's timing ("" when nothing did), up to three times while each
// failure came with a resubscription of the gateway's decision
// subscription (a cut made by anything else on the Redis server, or
// go-redis' reconnect): that wakes every waiter to look again, on
// purpose, and one whose request changed is answered then. A failure with
// no resubscription beside it fails the test.
func retryIfResubscribed(t *testing.T, g *bot.Gateway, try func() string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		before := g.Subscribed()
		msg := try()
		if msg == "" {
			return
		}
		if g.Subscribed() == before || attempt == 3 {
			t.Fatalf("%s (attempt %d; resubscriptions during it: %d)", msg, attempt, g.Subscribed()-before)
		}
		t.Logf("attempt %d: %s, with the subscription re-established meanwhile; again", attempt, msg)
	}
}

// TestProgressIsHeldAfterTheAnswer: this gateway's waiters hear of a vote
// that left the request pending ProgressHold after the voter's answer is
// sent, never sooner; a decision is not held.
func TestProgressIsHeldAfterTheAnswer(t *testing.T) {
	const hold = 300 * time.Millisecond
	p, people := committee(2)
	env := bottest.New(t, p, nil)
	env.Gateway.ProgressHold = hold
	var r *bot.Request
	answered := make(chan *bot.Request, 1)
	wait := func() {
		t.Helper()
		if got, _, err := env.Gateway.WaitFunc(context.Background(), r.ID, time.Minute, r.Seen, func(r *bot.Request, err error) { answered <- r }); err != nil || got != nil {
			t.Fatalf("wait = %+v, %v; want parked", got, err)
		}
	}
	retryIfResubscribed(t, env.Gateway, func() string {
		r = env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform apply"})
		wait()
		ctx, later := bot.WithAfterResponse(context.Background())
		if out, err := env.Gateway.CastVote(ctx, ballot(t, people[0], r)); err != nil || out.Decided {
			t.Fatalf("first of two approvals = %+v, %v; want counted, pending", out, err)
		}
		sent := time.Now()
		later.Run()
		select {
		case got := <-answered:
			if since := time.Since(sent); since < hold {
				return fmt.Sprintf("the waiter heard of the vote %v after the voter's answer, before the %v hold", since, hold)
			}
			if got == nil || len(got.Votes) != 1 {
				t.Fatalf("the waiter's answer = %+v, want the request with its vote", got)
			}
			r.Seen = got.Seen
		case <-time.After(5 * time.Second):
			t.Fatal("the waiter was not answered after the hold")
		}
		return ""
	})

	// The deciding vote: its waiter is answered (once sealed) without the hold.
	env.Gateway.ProgressHold = time.Hour
	wait()
	ctx, later := bot.WithAfterResponse(context.Background())
	if out, err := env.Gateway.CastVote(ctx, ballot(t, people[1], r)); err != nil || !out.Decided {
		t.Fatalf("second approval = %+v, %v; want the decision", out, err)
	}
	later.Run()
	select {
	case got := <-answered:
		if got == nil || got.Status != bot.Approved {
			t.Fatalf("the waiter's answer = %+v, want approved", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the decision was held (or never reached the waiter)")
	}
}

// TestHeldProgressIsToldWhileVotesKeepComing: votes on a request that
// keep coming within each other's hold (here a stranger's reactions every
// 50 ms, each held 200 ms) would keep its change notices held for as long
// as they come; the waiter is told of them within the bound of four holds
// all the same, while they still come.
func TestHeldProgressIsToldWhileVotesKeepComing(t *testing.T) {
	const (
		hold   = 200 * time.Millisecond
		every  = 50 * time.Millisecond
		stream = 4 * time.Second
	)
	p, _ := committee(2)
	env := bottest.New(t, p, nil)
	env.Gateway.ProgressHold = hold
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform apply"})
	answered := make(chan time.Time, 1)
	if got, _, err := env.Gateway.WaitFunc(context.Background(), r.ID, time.Minute, r.Seen, func(*bot.Request, error) { answered <- time.Now() }); err != nil || got != nil {
		t.Fatalf("wait = %+v, %v; want parked", got, err)
	}
	ballots := make([]bot.Ballot, int(stream/every))
	for i := range ballots {
		ballots[i] = ballot(t, bottest.NewPerson(fmt.Sprint("stranger", i)), r)
	}
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for _, b := range ballots {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			ctx, later := bot.WithAfterResponse(context.Background())
			out, err := env.Gateway.CastVote(ctx, b)
			later.Run()
			if err != nil || out.Result != bot.Ignored {
				t.Errorf("a stranger's reaction = %+v, %v; want ignored", out, err)
				return
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	select {
	case at := <-answered:
		if since := at.Sub(start); since >= stream-time.Second {
			t.Fatalf("the waiter heard of the reactions %v after they began, near the end of their %v stream: held while they kept coming", since, stream)
		}
	case <-time.After(stream + 5*time.Second):
		t.Fatal("the waiter was never told of the reactions")
	}
}
