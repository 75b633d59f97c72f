package redis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/quorum/quorumtest"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// manyMembers is a persona of n members and no approval quorum: every
// approval is counted and none decides.
func manyMembers(n int) (bot.Persona, []bot.Identity) {
	p := quorumtest.Persona(0, 1)
	p.Members = nil
	var ids []bot.Identity
	for i := range n {
		id := quorumtest.NostrID(fmt.Sprint("member", i))
		ids = append(ids, id)
		p.Members = append(p.Members, bot.Person{Name: fmt.Sprint("member", i), Identities: []bot.Identity{id}})
	}
	return p, ids
}

// stored decodes request id from what Redis holds, as reads did before the
// decode cache (HGETALL, both lists, decodeRequest), with Seen.
func stored(t *testing.T, s *qredis.Store, id string) *bot.Request {
	t.Helper()
	ctx := context.Background()
	k := s.RequestKeys(id)
	h, err := s.Client().HGetAll(ctx, k[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	votes, _ := s.Client().LRange(ctx, k[1], 0, -1).Result()
	msgs, _ := s.Client().LRange(ctx, k[4], 0, -1).Result()
	r, err := qredis.DecodeRequestBefore(h, votes, msgs)
	if err != nil {
		t.Fatal(err)
	}
	r.Seen = len(votes) // every answer stored, malformed or not
	return r
}

// spoil changes everything a caller could change in place on r.
func spoil(r *bot.Request) {
	r.Status, r.Action = "spoiled", "spoiled"
	for i := range r.Votes {
		r.Votes[i].Name, r.Votes[i].Voter.ID = "spoiled", "spoiled"
	}
	for i := range r.Messages {
		r.Messages[i].ID = "spoiled"
	}
	for i := range r.Reasons {
		r.Reasons[i] = "spoiled"
	}
	for i := range r.DecidedBy {
		r.DecidedBy[i] = "spoiled"
	}
	for i := range r.Event {
		r.Event[i] = '#'
	}
	for i := range r.Receipt {
		r.Receipt[i] = '#'
	}
	if g := r.GrantScope; g != nil {
		g.Tool = "spoiled"
		for i := range g.Reasons {
			g.Reasons[i] = "spoiled"
		}
	}
	if r.DecidedAt != nil {
		*r.DecidedAt = time.Unix(1, 0)
	}
	r.Reasons = append(r.Reasons, "spoiled")
	r.Votes = append(r.Votes, bot.Vote{Name: "spoiled"})
}

// TestGetReadsOnlyWhatItDecodes: a read is one round trip that asks for
// the hash fields it decodes, not the whole hash (whose persona snapshot is
// most of its bytes), and both lists.
func TestGetReadsOnlyWhatItDecodes(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			s, hook, _ := srv.CountedStore(t)
			p, _ := manyMembers(10)
			r := newRequest(t, s, p)
			hook.Reset()
			got, err := s.Get(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if n, hm, all, lr := hook.Trips(), hook.Count("HMGET", r.ID), hook.Count("HGETALL", ""), hook.Count("LRANGE", r.ID); n != 1 || hm != 1 || all != 0 || lr != 2 {
				t.Errorf("get sent %s in %d round trips; want HMGET and 2 LRANGE in 1", hook, n)
			}
			if got.ID != r.ID || got.Action != r.Action || !reflect.DeepEqual(got.Messages, r.Messages) {
				t.Errorf("get = %+v, want %+v", got, r)
			}
		})
	}
}

// TestGetMatchesStoredText: through a request's life — votes, messages
// added, a malformed vote line, a line and the doc changed in place, its
// decision, its receipt, its deletion — every Get is what decodeRequest
// made of the same keys before the decode cache (HMGET of the fields it
// reads included), and spoiling what Get returned changes no later Get.
func TestGetMatchesStoredText(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			s := bottest.Start(t, backend).Store(t)
			ctx := context.Background()
			p, voters := manyMembers(6)
			r := newRequest(t, s, p)
			k := s.RequestKeys(r.ID)
			c := s.Client()
			vote := func(i int) func() error {
				return func() error {
					_, err := s.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: voters[i], Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: fmt.Sprint("v", i)})
					return err
				}
			}
			steps := []struct {
				name string
				do   func() error
			}{
				{"created", func() error { return nil }},
				{"vote", vote(0)},
				{"vote again", vote(1)},
				{"message", func() error {
					return s.AddMessages(ctx, r.ID, []bot.MessageRef{{Platform: bot.Slack, Channel: "C1", ID: "1.2"}})
				}},
				{"malformed vote line", func() error { return c.RPush(ctx, k[1], "counted\nno json").Err() }},
				{"malformed message", func() error { return c.RPush(ctx, k[4], "{").Err() }},
				{"vote after", vote(2)},
				{"line changed in place", func() error {
					return c.LSet(ctx, k[1], 0, "ignored\nchanged\n"+`{"voter": {"platform": "nostr", "id": "ff"}, "vote": "deny"}`).Err()
				}},
				{"doc changed", func() error {
					return c.HSet(ctx, k[0], "doc", `{"id": "`+r.ID+`", "action": "changed", "reasons": ["a", "b"], "messages": []}`).Err()
				}},
				{"decided", func() error {
					_, err := s.Resolve(ctx, r.ID, bot.Denied, "no", time.Now())
					return err
				}},
				{"receipt and always", func() error { return c.HSet(ctx, k[0], "receipt", `{"kind": 1}`, "always", "1").Err() }},
				{"late vote", vote(3)},
			}
			for _, st := range steps {
				if err := st.do(); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				for n := range 2 {
					got, err := s.Get(ctx, r.ID)
					if err != nil {
						t.Fatalf("%s: get: %v", st.name, err)
					}
					if want := stored(t, s, r.ID); !reflect.DeepEqual(got, want) {
						t.Fatalf("%s, read %d:\n got %+v\nwant %+v", st.name, n, got, want)
					}
					spoil(got)
				}
			}
			if n := qredis.DecodeCacheLen(s); n != 1 {
				t.Errorf("decode cache holds %d requests, want 1", n)
			}
			if err := c.Del(ctx, k...).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, r.ID); bot.ErrorCode(err) != bot.ENotFound {
				t.Fatalf("get of a deleted request: %v, want not found", err)
			}
			if n := qredis.DecodeCacheLen(s); n != 0 {
				t.Errorf("decode cache holds %d requests after the only one was deleted", n)
			}
		})
	}
}

// TestGetConcurrentReaders: readers Get a request while votes arrive and
// spoil what they got; each sees the votes so far in order, never fewer
// than it saw before, and the last read is the stored request. Under -race
// this also shows that no two reads share memory.
func TestGetConcurrentReaders(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			s := bottest.Start(t, backend).Store(t)
			ctx := context.Background()
			p, voters := manyMembers(8)
			now := time.Now().UTC()
			r := &bot.Request{
				ID: bot.NewID(), Persona: p.Name, Action: "rm -rf /tmp/x", Status: bot.Pending, Level: bot.Dangerous,
				Reasons: []string{"deletes files", "recursive"}, CreatedAt: now, Deadline: now.Add(time.Hour),
				Event: json.RawMessage(`{"kind": 1}`), DecidedAt: &now, DecidedBy: []string{"nobody"},
				GrantScope: &bot.GrantScope{Tool: "bash", Reasons: []string{"deletes files"}},
				Messages:   []bot.MessageRef{{Platform: bot.Nostr, ID: bot.NewID()}},
			}
			if err := s.Create(ctx, r, p); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for range 4 {
				wg.Go(func() {
					seen := 0
					for {
						select {
						case <-done:
							return
						default:
						}
						got, err := s.Get(ctx, r.ID)
						if err != nil {
							errs <- err
							return
						}
						if len(got.Votes) < seen {
							errs <- fmt.Errorf("saw %d votes after %d", len(got.Votes), seen)
							return
						}
						seen = len(got.Votes)
						for i, v := range got.Votes {
							if v.Voter != voters[i] {
								errs <- fmt.Errorf("vote %d is %v, want %v", i, v.Voter, voters[i])
								return
							}
						}
						spoil(got)
					}
				})
			}
			for i, v := range voters {
				if _, err := s.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: v, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: fmt.Sprint(i)}); err != nil {
					t.Fatal(err)
				}
			}
			close(done)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			got, err := s.Get(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := stored(t, s, r.ID); !reflect.DeepEqual(got, want) || len(got.Votes) != len(voters) {
				t.Errorf("last read:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// BenchmarkGet reads a request with 10 votes and a message, as a waiter
// does after each vote: with the decode cache and without.
func BenchmarkGet(b *testing.B) {
	for _, backend := range bottest.Backends() {
		for _, cached := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/cached=%v", backend, cached), func(b *testing.B) {
				s := bottest.Start(b, backend).Store(b)
				if !cached {
					qredis.WithoutDecodeCache(s)
				}
				ctx := context.Background()
				p, voters := manyMembers(10)
				r := newRequest(b, s, p)
				for i, v := range voters {
					if _, err := s.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: v, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: fmt.Sprint(i)}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					got, err := s.Get(ctx, r.ID)
					if err != nil || len(got.Votes) != 10 {
						b.Fatalf("get: %d votes, %v", len(got.Votes), err)
					}
				}
			})
		}
	}
}
