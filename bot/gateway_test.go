package bot_test

import (
	"testing"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

func TestOwnerApprovesByReaction(t *testing.T) {
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: bot.DefaultTimeout}
	env := bottest.New(t, p, nil)
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "rm -rf /tmp/x", Reason: "clean"})
	if r.Status != bot.Pending {
		t.Fatalf("status = %s, want pending", r.Status)
	}
	out := env.React(t, alice, r, "✅")
	if out.Result != bot.Counted || !out.Decided {
		t.Fatalf("outcome = %+v, want counted and decided", out)
	}
	got := env.Await(t, r.ID)
	if got.Status != bot.Approved || len(got.DecidedBy) != 1 || got.DecidedBy[0] != "alice" {
		t.Fatalf("got %s by %v, want approved by alice", got.Status, got.DecidedBy)
	}
	again := env.React(t, alice, r, "❌")
	if again.Result != bot.Ignored || again.Status != bot.Approved {
		t.Fatalf("flip = %+v, want ignored, still approved", again)
	}
}
