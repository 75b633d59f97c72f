package bot_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// TestStrangerSpamIsBounded: anyone on a relay can react, so a flood of
// strangers' answers stops being stored (and audited) past the limit,
// and the owner's vote still decides.
func TestStrangerSpamIsBounded(t *testing.T) {
	owner := bot.Identity{Platform: bot.Slack, ID: "U0ALICE"}
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{owner}}, DenyQuorum: 1, Timeout: time.Minute}
	env := bottest.New(t, p, nil)
	ctx := context.Background()
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
	extra := 50
	for i := range qredis.MaxAnswers + extra {
		out, err := env.Gateway.CastVote(ctx, bot.Ballot{RequestID: r.ID, Voter: bot.Identity{Platform: bot.Slack, ID: fmt.Sprintf("U%07d", i)},
			Choice: bot.Approve, Proof: bot.ProofPlatform, DedupKey: fmt.Sprint("spam:", i)})
		if err != nil || out.Result != bot.Ignored || out.Status != bot.Pending {
			t.Fatalf("stranger %d: %+v, %v; want ignored, still pending", i, out, err)
		}
		if out.Recorded != (i < qredis.MaxAnswers) {
			t.Fatalf("stranger %d recorded=%v, want stored only below %d", i, out.Recorded, qredis.MaxAnswers)
		}
	}
	out, err := env.Gateway.CastVote(ctx, bot.Ballot{RequestID: r.ID, Voter: owner, Choice: bot.Approve, Proof: bot.ProofPlatform, DedupKey: "owner"})
	if err != nil || !out.Decided || !out.Recorded {
		t.Fatalf("owner after the flood: %+v, %v; want counted, stored, deciding", out, err)
	}
	got := env.Await(t, r.ID)
	if got.Status != bot.Approved || len(got.Votes) != qredis.MaxAnswers+1 {
		t.Fatalf("got %s with %d votes, want approved with %d", got.Status, len(got.Votes), qredis.MaxAnswers+1)
	}
	log, _ := os.ReadFile(env.AuditPath)
	if n := strings.Count(string(log), `"type":"vote"`); n != qredis.MaxAnswers+1 {
		t.Errorf("%d vote records audited, want %d", n, qredis.MaxAnswers+1)
	}
}
