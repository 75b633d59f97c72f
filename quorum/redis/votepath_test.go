package redis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/quorum/quorumtest"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// TestLookupOnTheCreatingReplicaNeedsNoRoundTrip: the replica that made a
// request finds it from its event (and a message posted later) in memory;
// another replica, and an unknown message, still ask Redis.
func TestLookupOnTheCreatingReplicaNeedsNoRoundTrip(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			here, hook, _ := srv.CountedStore(t)
			other := srv.Store(t)
			ctx := context.Background()
			p := bot.Persona{Name: "p", Owner: &bot.Person{Name: "o"}, DenyQuorum: 1}
			r := newRequest(t, here, p)
			later := bot.MessageRef{Platform: bot.Slack, Channel: "C1", ID: "1700000000.000100"}
			if err := here.AddMessages(ctx, r.ID, []bot.MessageRef{later}); err != nil {
				t.Fatal(err)
			}
			for _, ref := range []bot.MessageRef{r.Messages[0], later} {
				before := hook.Trips()
				id, err := here.Lookup(ctx, ref)
				if err != nil || id != r.ID {
					t.Fatalf("lookup %s here = %q, %v; want %s", ref.Key(), id, err, r.ID)
				}
				if n := hook.Trips() - before; n != 0 {
					t.Errorf("lookup %s on the creating replica sent %d commands, want 0", ref.Key(), n)
				}
				if id, err := other.Lookup(ctx, ref); err != nil || id != r.ID {
					t.Errorf("lookup %s on another replica = %q, %v; want %s from Redis", ref.Key(), id, err, r.ID)
				}
			}
			if _, err := here.Lookup(ctx, bot.MessageRef{Platform: bot.Nostr, ID: "0000"}); bot.ErrorCode(err) != bot.ENotFound {
				t.Errorf("lookup of an unknown message: err = %v, want %s", err, bot.ENotFound)
			}
		})
	}
}

// TestDecisiveAuditedVoteIsOneRoundTrip: the vote that decides a request
// tallies it, appends its audit record, enqueues the decision and takes
// the request out of the pending index in one script — one command, and
// nothing left in the index for the outbox sweeper to mistake.
func TestDecisiveAuditedVoteIsOneRoundTrip(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			s, hook, rdb := srv.CountedStore(t)
			ctx := context.Background()
			owner := bot.Identity{Platform: bot.Nostr, ID: strings.Repeat("ab", 32)}
			p := bot.Persona{Name: "p", Owner: &bot.Person{Name: "o", Identities: []bot.Identity{owner}}, DenyQuorum: 1}
			for seq := uint64(1); seq <= 2; seq++ { // the first loads the script
				r := newRequest(t, s, p)
				before := hook.Trips()
				out, inChain, err := s.RecordVoteAudited(ctx, bot.Ballot{
					RequestID: r.ID, Voter: owner, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: "d" + r.ID, At: time.Now(),
				}, bot.AuditRef{Seq: seq, Prev: fmt.Sprint("h", seq-1), Hash: fmt.Sprint("h", seq), Line: []byte(`{}`), Shared: true})
				if err != nil || !out.Decided || !inChain || out.Status != bot.Approved {
					t.Fatalf("owner's vote = %+v, in chain %v, %v; want approved, decided, in the chain", out, inChain, err)
				}
				if n := hook.Trips() - before; seq == 2 && n != 1 {
					t.Errorf("the deciding vote sent %d commands, want 1", n)
				}
				if err := rdb.ZScore(ctx, srv.Prefix+":pending", r.ID).Err(); !errors.Is(err, goredis.Nil) {
					t.Errorf("decided request still in the pending index (ZSCORE err %v)", err)
				}
			}
		})
	}
}

// TestAuditedVoteRefusedWhereItsRecordCannotBeAppended: Redis does not
// undo a script's writes when a later call fails, so the vote script
// checks, before it tallies, everything that would make its record's XADD
// fail. A vote that cannot be recorded is refused and counts for nothing:
// the audit stream of another type; an entry at or past the record's seq;
// and a stream whose newest entries were deleted (XTRIM, XDEL) while
// Redis still remembers their ids, which XADD refuses.
func TestAuditedVoteRefusedWhereItsRecordCannotBeAppended(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			rdb := srv.Client(t)
			s := qredis.New(rdb, srv.Prefix)
			ctx := context.Background()
			owner := bot.Identity{Platform: bot.Nostr, ID: strings.Repeat("cd", 32)}
			p := bot.Persona{Name: "p", Owner: &bot.Person{Name: "o", Identities: []bot.Identity{owner}}, DenyQuorum: 1}
			head, log := srv.Prefix+":{audit}:head", srv.Prefix+":{audit}:log"
			for _, tc := range []struct {
				name  string
				setup func() error
			}{
				{"stream of another type", func() error { return rdb.Set(ctx, log, "x", 0).Err() }},
				{"an entry at its seq", func() error {
					return rdb.XAdd(ctx, &goredis.XAddArgs{Stream: log, ID: "1-1", Values: []string{"r", "{}"}}).Err()
				}},
				{"newest entries deleted", func() error {
					for _, id := range []string{"1-1", "2-1"} {
						if err := rdb.XAdd(ctx, &goredis.XAddArgs{Stream: log, ID: id, Values: []string{"r", "{}"}}).Err(); err != nil {
							return err
						}
					}
					return rdb.XTrimMaxLen(ctx, log, 0).Err()
				}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					rdb.Del(ctx, head, log)
					if err := tc.setup(); err != nil {
						t.Fatal(err)
					}
					r := newRequest(t, s, p)
					_, _, err := s.RecordVoteAudited(ctx, bot.Ballot{
						RequestID: r.ID, Voter: owner, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: "d" + r.ID, At: time.Now(),
					}, bot.AuditRef{Seq: 1, Prev: "", Hash: "h1", Line: []byte(`{}`), Shared: true})
					if err == nil {
						t.Fatal("the vote was taken although its record could not be appended")
					}
					got, gerr := s.Get(ctx, r.ID)
					if gerr != nil || got.Status != bot.Pending || len(got.Votes) != 0 {
						t.Fatalf("after the refused vote: %+v, %v; want pending with no vote", got, gerr)
					}
				})
			}
			rdb.Del(ctx, head, log)
		})
	}
}

// TestCreateOnOneServerIsOneRoundTrip: on one Redis server a request, its
// messages and its indexes are written in one transaction, one round
// trip; another replica then finds it every way it is looked for.
func TestCreateOnOneServerIsOneRoundTrip(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			here, hook, _ := srv.CountedStore(t)
			other := srv.Store(t)
			ctx := context.Background()
			p := bot.Persona{Name: "p", Owner: &bot.Person{Name: "o"}, DenyQuorum: 1}
			newRequest(t, here, p) // the connection's handshake
			hook.Reset()
			r := newRequest(t, here, p)
			if n := hook.Trips(); n != 1 {
				t.Errorf("create took %d round trips, want 1: %s", n, hook)
			}
			if hook.Count("MULTI", "") != 1 || hook.Count("EXEC", "") != 1 {
				t.Errorf("create is not one transaction: %s", hook)
			}
			got, err := other.Get(ctx, r.ID)
			if err != nil || got.Status != bot.Pending || len(got.Messages) != 1 {
				t.Fatalf("another replica reads %+v, %v", got, err)
			}
			if id, err := other.Lookup(ctx, r.Messages[0]); err != nil || id != r.ID {
				t.Errorf("another replica looks up its message: %q, %v", id, err)
			}
			ids, err := other.PendingIDs(ctx)
			if err != nil || !slices.Contains(ids, r.ID) {
				t.Errorf("pending index: %v, %v; want it to hold %s", ids, err, r.ID)
			}
			due, err := other.Due(ctx, r.Deadline.Add(time.Second))
			if err != nil || !slices.Contains(due, r.ID) {
				t.Errorf("due after its deadline: %v, %v; want %s", due, err, r.ID)
			}
		})
	}
}

// TestAckOutboxIsOneRoundTrip: acknowledging a delivered decision and
// deleting it from the outbox is one round trip; the entry is then
// neither pending for its consumer nor claimable by another.
func TestAckOutboxIsOneRoundTrip(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			s, hook, rdb := srv.CountedStore(t)
			ctx := context.Background()
			p := quorumtest.Persona(0, 1)
			r := newRequest(t, s, p)
			if _, err := s.ReadOutbox(ctx, "c1", 10, -1, false); err != nil { // makes the group
				t.Fatal(err)
			}
			out, err := s.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: quorumtest.Alice, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: "e1", At: time.Now()})
			if err != nil || !out.Decided {
				t.Fatalf("owner's vote = %+v, %v", out, err)
			}
			got, err := s.ReadOutbox(ctx, "c1", 10, -1, false)
			if err != nil || len(got) != 1 || got[0].RequestID != r.ID {
				t.Fatalf("outbox = %+v, %v; want the decision", got, err)
			}
			hook.Reset()
			if err := s.AckOutbox(ctx, got[0].EntryID); err != nil {
				t.Fatal(err)
			}
			if n := hook.Trips(); n != 1 {
				t.Errorf("ack took %d round trips, want 1: %s", n, hook)
			}
			if left, _ := s.ReadOutbox(ctx, "c1", 10, -1, true); len(left) != 0 {
				t.Errorf("still pending for its consumer: %+v", left)
			}
			if claimed, _ := s.ClaimOutbox(ctx, "c2", 0, 10); len(claimed) != 0 {
				t.Errorf("claimable by another: %+v", claimed)
			}
			if n, _ := rdb.XLen(ctx, s.OutboxKey()).Result(); n != 0 {
				t.Errorf("the outbox stream holds %d entries after the ack", n)
			}
		})
	}
}
