package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// membersPersona is a persona whose quorum members (m0, m1, …) must all
// approve; its owner never votes here.
func membersPersona(quorum int) (bot.Persona, []bot.Identity) {
	owner := bottest.NewPerson("owner")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "owner", Identities: []bot.Identity{owner.Identity()}}, ApprovalQuorum: quorum, DenyQuorum: 1, Timeout: time.Hour}
	var ids []bot.Identity
	for i := range quorum {
		id := bottest.NewPerson(fmt.Sprint("m", i)).Identity()
		ids = append(ids, id)
		p.Members = append(p.Members, bot.Person{Name: fmt.Sprint("m", i), Identities: []bot.Identity{id}})
	}
	return p, ids
}

func castVote(t *testing.T, env *bottest.Env, r *bot.Request, voter bot.Identity) bot.VoteOutcome {
	t.Helper()
	out, err := env.Gateway.CastVote(context.Background(), bot.Ballot{RequestID: r.ID, Voter: voter, Choice: bot.Approve, Proof: bot.ProofPlatform, DedupKey: "vote:" + voter.ID})
	if err != nil || out.Result != bot.Counted {
		t.Errorf("vote of %s = %+v, %v; want counted", voter.ID, out, err) // not Fatal: voters run on goroutines
	}
	return out
}

// reads is how many times the replica whose commands log records read
// request id (each read asks for its votes), its sweeps' lists aside.
func reads(log *bottest.Commands, id string) int { return log.Count("LRANGE", id) }

// TestVoteNoticeAnswersWaiterOnAnotherReplica: a request made on replica
// a, voted on through b, and waited on at c. Each vote that leaves it
// pending answers c's waiter with the vote, read from nothing: c sends no
// command for the request, and the answer is what a read gives. The
// waiter's next long-poll (with what it saw) is parked with no command
// either. A vote c missed (stored with no notice) is read, and so is the
// decision.
func TestVoteNoticeAnswersWaiterOnAnotherReplica(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			p, voters := membersPersona(4)
			srv := bottest.Start(t, backend)
			a := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
			b := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
			crdb := srv.Client(t)
			log := &bottest.Commands{Tag: bottest.TagListReads}
			crdb.AddHook(log)
			c := bottest.NewOn(t, crdb, srv.Prefix, p, nil)
			ctx := context.Background()
			r := a.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform apply"})

			answers := make(chan *bot.Request, 1)
			wait := func(seen int) {
				t.Helper()
				got, w, err := c.Gateway.WaitFunc(ctx, r.ID, time.Minute, seen, func(r *bot.Request, err error) {
					if err != nil {
						t.Error(err)
					}
					answers <- r
				})
				if err != nil || w == nil {
					t.Fatalf("wait with seen %d = %+v, %v; want parked", seen, got, err)
				}
			}
			answer := func() *bot.Request {
				t.Helper()
				select {
				case got := <-answers:
					return got
				case <-time.After(10 * time.Second):
					t.Fatal("waiter on replica c not answered 10s after the vote on b")
					return nil
				}
			}
			wait(-1) // reads the request once
			for i := range 2 {
				log.Reset()
				castVote(t, b, r, voters[i])
				got := answer()
				if n := reads(log, r.ID); n != 0 || log.Count("HMGET", r.ID) != 0 {
					t.Errorf("vote %d: replica c read the request to answer its waiter: %s", i, log)
				}
				if got.Status != bot.Pending || len(got.Votes) != i+1 || got.Votes[i].Voter != voters[i] || got.Seen != i+1 {
					t.Fatalf("vote %d answered %s with %d votes (seen %d), want pending with %d", i, got.Status, len(got.Votes), got.Seen, i+1)
				}
				want, err := c.Gateway.Get(ctx, r.ID)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
					t.Fatalf("vote %d answered\n%s\nwhere a read gives\n%s", i, g, w)
				}
				log.Reset()
				wait(got.Seen)
				if log.Count("HGET", r.ID)+log.Count("LLEN", r.ID)+reads(log, r.ID) != 0 {
					t.Errorf("vote %d: parking the next long-poll sent %s, want nothing", i, log)
				}
			}

			// A vote whose notice c never hears (stored by hand, as one
			// lost would leave it), then one it hears: a gap, read.
			votesKey := srv.Prefix + ":req:{" + r.ID + "}:votes"
			stray := bot.Vote{Voter: bot.Identity{Platform: bot.Nostr, ID: "ee"}, Choice: bot.Approve, At: time.Now().UTC()}
			if err := b.Redis.RPush(ctx, votesKey, "ignored\nnot an owner or member\n"+mustJSON(t, stray)).Err(); err != nil {
				t.Fatal(err)
			}
			// (Read by the waiter, or first by a sweep, which reads every
			// pending request; the store's own test sees the gap read.)
			castVote(t, b, r, voters[2])
			got := answer()
			if len(got.Votes) != 4 || got.Votes[2].Voter != stray.Voter || got.Votes[3].Voter != voters[2] {
				t.Fatalf("the vote after one missed answered %d votes, want 4 with the stray third", len(got.Votes))
			}

			// The decision is read.
			wait(got.Seen)
			log.Reset()
			castVote(t, b, r, voters[3])
			got = answer()
			if got.Status != bot.Approved || len(got.Receipt) == 0 {
				t.Fatalf("decision answered %s (receipt %d bytes), want approved and sealed", got.Status, len(got.Receipt))
			}
			if reads(log, r.ID) == 0 {
				t.Errorf("the decision was answered without a read: %s", log)
			}
		})
	}
}

// TestLongPollsRaceVotes: a client long-polls on replica c, each poll
// saying what it saw, while votes land through b as fast as they are
// cast. The re-poll is parked on what the notices said (no round trip)
// while a notice may be on its way; every vote still reaches the client,
// in order, each answer exactly what Redis held after some vote, and the
// decision ends it.
func TestLongPollsRaceVotes(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			const n = 12
			p, voters := membersPersona(n)
			srv := bottest.Start(t, backend)
			b := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
			c := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
			ctx := context.Background()
			r := b.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
			var wg sync.WaitGroup
			wg.Go(func() {
				for _, v := range voters {
					castVote(t, b, r, v)
				}
			})
			defer wg.Wait()
			seen := -1
			for polls := 0; ; polls++ {
				ch := make(chan *bot.Request, 1)
				got, w, err := c.Gateway.WaitFunc(ctx, r.ID, time.Minute, seen, func(r *bot.Request, err error) {
					if err != nil {
						t.Error(err)
					}
					ch <- r
				})
				if err != nil {
					t.Fatal(err)
				}
				if w != nil {
					select {
					case got = <-ch:
					case <-time.After(10 * time.Second):
						t.Fatalf("poll %d (seen %d) not answered in 10s: a vote's wake was lost", polls, seen)
					}
				}
				if got == nil {
					t.Fatalf("poll %d answered nothing", polls)
				}
				if got.Seen < seen || len(got.Votes) != got.Seen {
					t.Fatalf("poll %d answered seen %d with %d votes after seen %d", polls, got.Seen, len(got.Votes), seen)
				}
				for i, v := range got.Votes {
					if v.Voter != voters[i] {
						t.Fatalf("poll %d: vote %d is %s's, want %s's", polls, i, v.Voter.ID, voters[i].ID)
					}
				}
				if got.Status.Final() {
					if got.Status != bot.Approved || got.Seen != n {
						t.Fatalf("ended %s with %d votes, want approved with %d", got.Status, got.Seen, n)
					}
					return
				}
				seen = got.Seen
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
