package bot_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
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
			// take a vote, as a replica about to die does.
			a.Gateway.Close()
			r := a.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform destroy"})
			if out := a.React(t, alice, r, "✅"); !out.Decided {
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
