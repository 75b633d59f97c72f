package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// TestVoteWakesLongPoll: a counted vote that does not decide still ends a
// long-poll at once, on every backend, showing the vote and who is left.
func TestVoteWakesLongPoll(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			tm := newTeam("demo", 2, 1)
			env := bottest.NewOn(t, srv.Client(t), srv.Prefix, tm.persona, nil)
			r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "git push --force"})
			got := make(chan *bot.Request, 1)
			go func() {
				r, _ := env.Gateway.Wait(context.Background(), r.ID, 30*time.Second)
				got <- r
			}()
			for env.Gateway.Waiting() == 0 {
				time.Sleep(time.Millisecond)
			}
			start := time.Now()
			env.React(t, tm.members[0], r, "✅")
			select {
			case w := <-got:
				if w.Status != bot.Pending || len(w.Votes) != 1 || w.Electorate == nil || w.Electorate.Needs != "the owner (alice), or 1 more of: member2, member3, member4, member5" {
					t.Fatalf("woke with %s, %d votes, electorate %+v", w.Status, len(w.Votes), w.Electorate)
				}
				t.Logf("woken %s after the vote", time.Since(start))
			case <-time.After(5 * time.Second):
				t.Fatal("a counted vote did not end the long-poll")
			}
		})
	}
}

// TestWithdrawnRequestCannotBeApproved: once withdrawn, the owner's ✅ is
// recorded and ignored, and a second withdraw is a conflict.
func TestWithdrawnRequestCannotBeApproved(t *testing.T) {
	tm := newTeam("demo", 1, 1)
	env := bottest.New(t, tm.persona, nil)
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform destroy"})
	w, err := env.Gateway.Withdraw(context.Background(), r.ID, "")
	if err != nil || w.Status != bot.Withdrawn || w.DecisionReason != "the requester withdrew it" {
		t.Fatalf("withdraw = %+v, %v", w, err)
	}
	out := env.React(t, tm.owner, r, "✅")
	if out.Result != bot.Ignored || out.Status != bot.Withdrawn {
		t.Errorf("owner's ✅ after withdraw: %+v", out)
	}
	if _, err := env.Gateway.Withdraw(context.Background(), r.ID, ""); bot.ErrorCode(err) != bot.EConflict {
		t.Errorf("second withdraw: %v, want a conflict", err)
	}
	if got := env.Await(t, r.ID); got.Status != bot.Withdrawn {
		t.Errorf("status %s", got.Status)
	}
	// The decision is audited by the follow-up, which runs after it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, rec := range readAudit(t, env) {
			if rec.Type == "decision" && strings.Contains(string(rec.Data), `"withdrawn"`) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no decision record says withdrawn")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
