package bot_test

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/signing"
)

// TestDecisionOfAReplicaThatDiedIsDeliveredOnceByAnother: replica A
// decides, takes the decision from the outbox and dies before delivering
// it (its follow-up goroutine used to be the only one that would). Replica
// B claims the entry once it is idle and delivers it: one decision record
// on the one chain; delivering again adds nothing.
func TestDecisionOfAReplicaThatDiedIsDeliveredOnceByAnother(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			alice := bottest.NewPerson("alice")
			p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Minute}
			srv := bottest.Start(t, backend)
			a := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
			// A stops delivering (its outbox reader is gone) but can still
			// take a vote, as a replica about to die does. (A denial: an
			// approval's record is appended before its receipt, by A.)
			a.Gateway.Close()
			r := a.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform destroy"})
			if out := a.React(t, alice, r, "❌"); !out.Decided {
				t.Fatalf("vote = %+v, want it to decide", out)
			}
			taken, err := a.Store.ReadOutbox(context.Background(), "replica-a", 10, -1, false)
			if err != nil || len(taken) != 1 || taken[0].RequestID != r.ID {
				t.Fatalf("replica A takes %v, %v; want the one decision", taken, err)
			}
			// A dies here. No decision record exists yet.
			if n := countRecords(a.Chain(t), "decision", r.ID); n != 0 {
				t.Fatalf("%d decision records before anyone delivered", n)
			}
			b := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
			b.Gateway.Close()
			b.Gateway.ClaimIdle = 200 * time.Millisecond
			b.Gateway.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			if err := b.Gateway.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for countRecords(b.Chain(t), "decision", r.ID) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("replica B did not deliver A's decision within 10s")
				}
				time.Sleep(20 * time.Millisecond)
			}
			// A second delivery of the same decision (a retry after a lost
			// ack) audits nothing more.
			if err := b.Redis.XAdd(context.Background(), &goredis.XAddArgs{Stream: srv.Prefix + ":{outbox}", Values: []any{"id", r.ID}}).Err(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
			b.Gateway.Close()
			left, _ := b.Store.ClaimOutbox(context.Background(), "check", 0, 10)
			if len(left) != 0 {
				t.Errorf("outbox still holds %v after delivery", left)
			}
			if n := countRecords(b.Chain(t), "decision", r.ID); n != 1 {
				t.Fatalf("%d decision records, want exactly 1", n)
			}
		})
	}
}

// TestApprovalReceiptNeverPrecedesItsRecord: the receipt is what clients
// act on, so an approval's decision record is on the chain before its
// receipt exists — even on a replica whose outbox never delivers (it is
// about to die): a client can never run an approved action that the audit
// trail does not hold.
func TestApprovalReceiptNeverPrecedesItsRecord(t *testing.T) {
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Minute}
	srv := bottest.Start(t, "embedded")
	a := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
	a.Gateway.Close() // no outbox delivery: the seal runs inside the vote
	r := a.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform destroy"})
	if out := a.React(t, alice, r, "✅"); !out.Decided || out.Status != bot.Approved {
		t.Fatalf("vote = %+v, want it to approve", out)
	}
	got, err := a.Gateway.Get(context.Background(), r.ID)
	if err != nil || got.Status != bot.Approved {
		t.Fatalf("the approval reads %v %v, want approved (sealed)", got, err)
	}
	if n := countRecords(a.Chain(t), "decision", r.ID); n != 1 {
		t.Fatalf("approved and sealed with %d decision records on the chain, want 1", n)
	}
}

// TestDecisionNeverEnqueuedIsSweptAndEditedOnce: replica A's vote step
// decides and A stops at once, before it puts the decision in the outbox
// (the gap on Redis Cluster, where the two are separate steps; here the
// store's failpoint ends the voting goroutine exactly there). Replica B's
// sweeper finds the decided request in the pending index and enqueues
// it: the card is edited once, the receipt sealed, one decision record;
// the same entry delivered again changes nothing.
func TestDecisionNeverEnqueuedIsSweptAndEditedOnce(t *testing.T) {
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Minute,
		Channels: []bot.ChannelConfig{{Platform: bot.Slack, Target: "C0123"}}}
	srv := bottest.Start(t, "embedded")
	ch := &fakeChannel{updates: make(chan *bot.Request, 4)}
	a := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, map[bot.Platform]bot.Channel{bot.Slack: ch})
	a.Gateway.Close()
	r := a.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform destroy"})
	raw := alice.Reaction(r, "✅", time.Now())
	re, err := signing.ParseReaction(raw, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ballot := re.Ballot(raw)
	ballot.RequestID = r.ID
	a.Store.AfterDecide = func(string) { runtime.Goexit() } // A dies here
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Store.RecordVote(context.Background(), ballot)
	}()
	<-done
	if got, _ := a.Store.Get(context.Background(), r.ID); got.Status != bot.Approved || len(got.Receipt) != 0 {
		t.Fatalf("after A: %s with %d receipt bytes, want approved and unsealed", got.Status, len(got.Receipt))
	}
	if es, _ := a.Store.ReadOutbox(context.Background(), "look", 10, -1, false); len(es) != 0 {
		t.Fatalf("the outbox holds %v, want nothing (A died before enqueueing)", es)
	}

	b := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, map[bot.Platform]bot.Channel{bot.Slack: ch})
	select {
	case u := <-ch.updates:
		if u.ID != r.ID || u.Status != bot.Approved {
			t.Fatalf("edited %s to %s, want %s approved", u.ID, u.Status, r.ID)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("replica B did not sweep and deliver the decision within 20s")
	}
	if err := b.Redis.XAdd(context.Background(), &goredis.XAddArgs{Stream: srv.Prefix + ":{outbox}", Values: []any{"id", r.ID}}).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case u := <-ch.updates:
		t.Fatalf("edited again on a second delivery: %s", u.Status)
	case <-time.After(time.Second):
	}
	got, err := b.Gateway.Get(context.Background(), r.ID)
	if err != nil || got.Status != bot.Approved || len(got.Receipt) == 0 {
		t.Fatalf("read through B: %+v, %v; want approved with a receipt", got, err)
	}
	if n := countRecords(b.Chain(t), "decision", r.ID); n != 1 {
		t.Fatalf("%d decision records, want exactly 1", n)
	}
}

// TestOwnApprovalIsNotAuditedAgainByItsOutbox: the replica that approves
// appends the decision record before the receipt; its own outbox
// delivery, which follows, sends no second attempt at that record (it
// used to, and the store refused it as audited: a script call, a line
// written to the file and taken back, per decision). Still one record.
func TestOwnApprovalIsNotAuditedAgainByItsOutbox(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			alice := bottest.NewPerson("alice")
			p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Minute}
			srv := bottest.Start(t, backend)
			_, cmds, rdb := srv.CountedStore(t)
			a := bottest.NewOn(t, rdb, srv.Prefix, p, nil)
			r := a.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform destroy"})
			if out := a.React(t, alice, r, "✅"); !out.Decided || out.Status != bot.Approved {
				t.Fatalf("vote = %+v, want it to approve", out)
			}
			a.Gateway.Close() // waits for the seal and delivers what the outbox holds
			if left, _ := a.Store.ClaimOutbox(context.Background(), "check", 0, 10); len(left) != 0 {
				t.Fatalf("outbox still holds %v: the delivery did not run", left)
			}
			decisionRecord := func(args []string) bool {
				for _, a := range args {
					if strings.Contains(a, `"type":"decision"`) && strings.Contains(a, r.ID) {
						return true
					}
				}
				return false
			}
			if n := cmds.Sent("EVALSHA", decisionRecord) + cmds.Sent("EVAL", decisionRecord); n != 1 {
				t.Errorf("the decision record was sent to the store %d times, want once (the seal's); commands: %s", n, cmds)
			}
			if n := countRecords(a.Chain(t), "decision", r.ID); n != 1 {
				t.Fatalf("%d decision records, want exactly 1", n)
			}
		})
	}
}
