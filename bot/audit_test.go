package bot_test

import (
	"context"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/signing"
)

// breakAuditStream turns the store's audit stream into a string, as a
// failing or tampered store would leave it: no record can be appended.
func breakAuditStream(t *testing.T, env *bottest.Env, prefix string) func() {
	t.Helper()
	ctx := context.Background()
	key, saved := prefix+":{audit}:log", prefix+":{audit}:saved"
	if err := env.Redis.Rename(ctx, key, saved).Err(); err != nil {
		t.Fatalf("rename %s: %v", key, err)
	}
	if err := env.Redis.Set(ctx, key, "not a stream", 0).Err(); err != nil {
		t.Fatal(err)
	}
	return func() {
		env.Redis.Del(ctx, key)
		if err := env.Redis.Rename(ctx, saved, key).Err(); err != nil {
			t.Fatalf("restore %s: %v", key, err)
		}
	}
}

// TestVoteIsRefusedWhenItsRecordCannotBeWritten: issue 9 item 7 — the
// audit cannot be written, yet votes counted and requests were approved
// with no record. Now the vote is refused (unavailable, a 503) and nothing
// is decided on it; once the log works again the same vote counts.
func TestVoteIsRefusedWhenItsRecordCannotBeWritten(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			alice := bottest.NewPerson("alice")
			p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Minute}
			srv := bottest.Start(t, backend)
			env := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
			r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "rm -rf /srv/data"})
			before := len(env.Chain(t))

			restore := breakAuditStream(t, env, srv.Prefix)
			raw := alice.Reaction(r, "✅", time.Now())
			re, err := signing.ParseReaction(raw, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			out, err := env.Gateway.CastVote(context.Background(), re.Ballot(raw))
			if bot.ErrorCode(err) != bot.EUnavailable {
				t.Fatalf("vote with the audit unwritable = %+v, %v; want it refused as unavailable", out, err)
			}
			got, _ := env.Gateway.Get(context.Background(), r.ID)
			if got.Status != bot.Pending || len(got.Votes) != 0 {
				t.Fatalf("after the refused vote: %s with %d votes; want pending with none", got.Status, len(got.Votes))
			}
			// A new request is refused too: it could not be recorded.
			if _, err := env.Gateway.Submit(context.Background(), bot.NewRequest{Persona: "demo", Action: "ls"}); bot.ErrorCode(err) != bot.EUnavailable {
				t.Fatalf("submit with the audit unwritable: %v; want unavailable", err)
			}
			restore()
			if len(env.Chain(t)) != before {
				t.Fatalf("the chain grew while it could not be written")
			}
			out, err = env.Gateway.CastVote(context.Background(), re.Ballot(raw))
			if err != nil || !out.Decided || out.Status != bot.Approved {
				t.Fatalf("the same vote once the log works = %+v, %v; want it to approve", out, err)
			}
			votes := 0
			for _, rec := range env.Chain(t) {
				if rec.Type == "vote" && rec.RequestID == r.ID {
					votes++
				}
			}
			if votes != 1 {
				t.Errorf("%d vote records, want 1", votes)
			}
		})
	}
}

// TestDeadlineWhileTheAuditIsDownIsAnExpiry: a refused vote does not hold
// the request open past its deadline, nor approve it later.
func TestDeadlineWhileTheAuditIsDownIsAnExpiry(t *testing.T) {
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Minute}
	srv := bottest.Start(t, "embedded")
	env := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "rm -rf /srv/data", Timeout: bot.Duration(300 * time.Millisecond)})
	restore := breakAuditStream(t, env, srv.Prefix)
	raw := alice.Reaction(r, "✅", time.Now())
	re, _ := signing.ParseReaction(raw, time.Now())
	if _, err := env.Gateway.CastVote(context.Background(), re.Ballot(raw)); bot.ErrorCode(err) != bot.EUnavailable {
		t.Fatalf("vote: %v, want unavailable", err)
	}
	if got := env.Await(t, r.ID); got.Status != bot.Expired {
		t.Fatalf("status %s, want expired", got.Status)
	}
	restore()
	out, err := env.Gateway.CastVote(context.Background(), re.Ballot(raw))
	if err != nil || out.Status != bot.Expired || out.Result == bot.Counted {
		t.Fatalf("the vote retried after the deadline = %+v, %v; want ignored, expired", out, err)
	}
}
