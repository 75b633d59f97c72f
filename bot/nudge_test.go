package bot_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/quorum"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// TestRemindAndEscalateOnAFakeClock: remind: 2m re-posts at 2m and 4m (once
// each, however often the sweeper looks); escalate after 3m re-posts once
// naming the members; each is audited; no one new may decide.
func TestRemindAndEscalateOnAFakeClock(t *testing.T) {
	tm := newTeam("demo", 2, 1)
	tm.persona.Channels = []bot.ChannelConfig{{Platform: bot.Slack, Target: "C0123"}}
	tm.persona.Remind = 2 * time.Minute
	tm.persona.Escalate = &bot.Escalation{After: 3 * time.Minute, To: []string{"member1", "member2"}}
	ch := &fakeChannel{updates: make(chan *bot.Request, 4)}
	env := bottest.New(t, tm.persona, map[bot.Platform]bot.Channel{bot.Slack: ch})
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform destroy"})
	posts := func() int { ch.mu.Lock(); defer ch.mu.Unlock(); return ch.posts }
	ctx := context.Background()
	for _, step := range []struct {
		at    time.Duration
		posts int
	}{
		{time.Minute, 1}, {2 * time.Minute, 2}, {2*time.Minute + 30*time.Second, 2}, {2*time.Minute + 31*time.Second, 2},
		{3 * time.Minute, 3}, {3*time.Minute + 10*time.Second, 3}, {4 * time.Minute, 4}, {4 * time.Minute, 4},
	} {
		env.Gateway.Nudge(ctx, r.CreatedAt.Add(step.at))
		if got := posts(); got != step.posts {
			t.Fatalf("at +%s: %d posts, want %d", step.at, got, step.posts)
		}
	}
	var reminds, escalations int
	for _, rec := range readAudit(t, env) {
		switch rec.Type {
		case "remind":
			reminds++
		case "escalate":
			escalations++
			if !strings.Contains(string(rec.Data), `"member1","member2"`) {
				t.Errorf("escalation record %s does not name the members", rec.Data)
			}
		}
	}
	if reminds != 2 || escalations != 1 {
		t.Errorf("audited %d reminders and %d escalations, want 2 and 1", reminds, escalations)
	}
	// Decided: nothing more is posted.
	env.React(t, tm.owner, r, "✅")
	env.Await(t, r.ID)
	env.Gateway.Nudge(ctx, r.CreatedAt.Add(6*time.Minute))
	if got := posts(); got != 4 {
		t.Errorf("after the decision: %d posts, want 4", got)
	}
}

func TestEscalateOnlyToMembers(t *testing.T) {
	_, ps := quorum.ParsePersona("p.yaml", []byte("name: p\nowner:\n  name: alice\n  slack: U01ALICE\nmembers:\n  - name: bob\n    slack: U02BOB\nremind: 2m\nescalate:\n  after: 3m\n  to: [bob, mallory]\n"))
	if errs := ps.Errors(); len(errs) != 1 || !strings.Contains(errs.Error(), `"mallory" is not a member`) {
		t.Errorf("problems = %v", ps)
	}
	p, ps := quorum.ParsePersona("p.yaml", []byte("name: p\nowner:\n  name: alice\n  slack: U01ALICE\nmembers:\n  - name: bob\n    slack: U02BOB\nremind: 2m\nescalate: {after: 3m, to: [bob]}\n"))
	if len(ps.Errors()) > 0 || p.Remind != 2*time.Minute || p.Escalate == nil || p.Escalate.After != 3*time.Minute || p.Escalate.To[0] != "bob" {
		t.Errorf("parsed %+v %v", p, ps)
	}
}

// TestNudgeReadsOnlyRequestsThatRemind: the sweeper's look for reminders
// reads a pending request only when its persona reminds or escalates.
// Requests under a persona that does neither cost it one ZRANGE, and on a
// replica that did not make them one read of each one's persona snapshot,
// once; it read every pending request whole every NudgeEvery.
func TestNudgeReadsOnlyRequestsThatRemind(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			tm := newTeam("demo", 1, 1)
			a := bottest.NewOn(t, srv.Client(t), srv.Prefix, tm.persona, nil)
			const n = 20
			for i := range n {
				a.Submit(t, bot.NewRequest{Persona: "demo", Action: fmt.Sprint("deploy ", i), Nonce: bot.NewNonce()})
			}
			rdb := srv.Client(t)
			log := &bottest.Commands{}
			rdb.AddHook(log)
			// Another replica's store, nothing of these requests in its
			// memory, and no sweeper of its own to nudge meanwhile.
			b := &bot.Gateway{Store: qredis.New(rdb, srv.Prefix)}
			ctx := context.Background()
			if err := rdb.Ping(ctx).Err(); err != nil { // the connection's own handshake, before counting
				t.Fatal(err)
			}
			for round, want := range []struct{ snapshots, total int }{{n, n + 1}, {0, 1}} {
				log.Reset()
				b.Nudge(ctx, time.Now().Add(time.Minute))
				if got := log.Count("LRANGE", "") + log.Count("HMGET", ""); got != 0 {
					t.Errorf("nudge %d read requests under a persona that neither reminds nor escalates (%d LRANGE/HMGET): %s", round+1, got, log)
				}
				if got := log.Count("HGET", ""); got != want.snapshots {
					t.Errorf("nudge %d read %d persona snapshots, want %d: %s", round+1, got, want.snapshots, log)
				}
				if got := log.Trips(); got != int64(want.total) {
					t.Errorf("nudge %d made %d round trips, want %d: %s", round+1, got, want.total, log)
				}
			}
		})
	}
}
