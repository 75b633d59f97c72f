package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/quorum/quorumtest"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// makeLegacy turns a request just made into one as the version before
// this layout made it: "deadline" in its hash, not "due", and no marker
// at its seen key (that version kept its voters and deliveries in keys of
// their own).
func makeLegacy(t *testing.T, rdb goredis.UniversalClient, prefix string, r *bot.Request) {
	t.Helper()
	ctx := context.Background()
	k := prefix + ":req:{" + r.ID + "}"
	due, err := rdb.HGet(ctx, k, "due").Result()
	if err != nil {
		t.Fatalf("the new request has no due field: %v", err)
	}
	if err := rdb.HSet(ctx, k, "deadline", due).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.HDel(ctx, k, "due")
	rdb.Del(ctx, k+":seen")
}

// TestScenariosAcrossARollingUpgrade: while replicas of both versions run,
// a legacy request's ballots arrive at either; each ballot is judged as
// the table says (nobody counted twice, a delivery counted once), however
// they alternate, and its decision gives the keys the older version wrote
// their TTL too.
func TestScenariosAcrossARollingUpgrade(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			rdb := srv.Client(t)
			s := qredis.New(rdb, srv.Prefix)
			legacy := qredis.LegacyVoteScript(t)
			for first := range 2 {
				for _, sc := range quorumtest.Scenarios {
					t.Run(fmt.Sprintf("%s/older-first=%v", sc.Name, first == 0), func(t *testing.T) {
						n := first
						cast := func(ctx context.Context, b bot.Ballot) (bot.VoteOutcome, error) {
							n++
							if n%2 == 1 {
								return s.RecordVoteWith(ctx, b, legacy)
							}
							return s.RecordVote(ctx, b)
						}
						var r *bot.Request
						runScenarioWith(t, s, sc, func(req *bot.Request) { r = req; makeLegacy(t, rdb, srv.Prefix, req) }, cast)
						if !sc.Want.Status.Final() {
							return
						}
						for _, key := range []string{"voters", "seen"} {
							k := srv.Prefix + ":req:{" + r.ID + "}:" + key
							if n, _ := rdb.Exists(context.Background(), k).Result(); n == 0 {
								continue
							}
							if ttl, _ := rdb.TTL(context.Background(), k).Result(); ttl <= 0 {
								t.Errorf("decided legacy request: its %s key has TTL %v, want the retention", key, ttl)
							}
						}
					})
				}
			}
		})
	}
}

// TestOlderReplicaRefusesVotesOnNewRequests: a replica still running the
// version before this layout cannot count a vote on a request made since
// (it would keep the voter where this version does not look, and the same
// person could vote again here). Its script fails with nothing written,
// with a delivery id and without; the same ballot then counts here once.
func TestOlderReplicaRefusesVotesOnNewRequests(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			rdb := srv.Client(t)
			s := qredis.New(rdb, srv.Prefix)
			ctx := context.Background()
			legacy := qredis.LegacyVoteScript(t)
			for _, dedup := range []string{"slack:1", ""} {
				t.Run(fmt.Sprintf("dedup=%q", dedup), func(t *testing.T) {
					r := newRequest(t, s, quorumtest.Persona(2, 1))
					b := bot.Ballot{RequestID: r.ID, Voter: quorumtest.BobSlack, Choice: bot.Approve, Proof: bot.ProofPlatform, DedupKey: dedup, At: time.Now()}
					if out, err := s.RecordVoteWith(ctx, b, legacy); err == nil {
						t.Fatalf("the older replica's vote = %+v, want an error", out)
					}
					k := srv.Prefix + ":req:{" + r.ID + "}"
					if n, _ := rdb.LLen(ctx, k+":votes").Result(); n != 0 {
						t.Errorf("%d answers stored by the refused vote", n)
					}
					if n, _ := rdb.Exists(ctx, k+":voters").Result(); n != 0 {
						t.Error("the refused vote wrote a voters key")
					}
					if typ, _ := rdb.Type(ctx, k+":seen").Result(); typ != "string" {
						t.Errorf("the seen key is a %s after the refused vote, want the marker string", typ)
					}
					out, err := s.RecordVote(ctx, b)
					if err != nil || out.Result != bot.Counted {
						t.Fatalf("the same ballot here = %+v, %v; want counted", out, err)
					}
					if out, err := s.RecordVote(ctx, b); err != nil || out.Result == bot.Counted {
						t.Fatalf("the same ballot again = %+v, %v; want not counted", out, err)
					}
				})
			}
		})
	}
}

// TestVotersAndDeliveriesLiveInTheRequestHash: a new request's votes add
// no keys of their own, so its decision has only its hash and its answers
// to give a TTL; the seen key holds the marker, with the hash's TTL.
func TestVotersAndDeliveriesLiveInTheRequestHash(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			rdb := srv.Client(t)
			s := qredis.New(rdb, srv.Prefix)
			ctx := context.Background()
			r := newRequest(t, s, quorumtest.Persona(2, 1))
			for i, v := range []bot.Identity{quorumtest.BobSlack, quorumtest.Carol} {
				if _, err := s.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: v, Choice: bot.Approve, Proof: bot.ProofPlatform, DedupKey: fmt.Sprint("slack:", i), At: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			k := srv.Prefix + ":req:{" + r.ID + "}"
			if n, _ := rdb.Exists(ctx, k+":voters").Result(); n != 0 {
				t.Error("a voters key was written")
			}
			h, err := rdb.HGetAll(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if h["status"] != "approved" || h["v:bob"] != "member:approve" || h["d:slack:0"] == "" || h["d:slack:1"] == "" {
				t.Errorf("request hash after two approvals: status %q, v:bob %q, d:slack:0 %q, d:slack:1 %q", h["status"], h["v:bob"], h["d:slack:0"], h["d:slack:1"])
			}
			for _, key := range []string{k, k + ":votes"} {
				if ttl, _ := rdb.TTL(ctx, key).Result(); ttl <= 0 || ttl > s.Retention {
					t.Errorf("%s: TTL %v after the decision, want at most the retention %v", strings.TrimPrefix(key, srv.Prefix), ttl, s.Retention)
				}
			}
			if err := rdb.Get(ctx, k+":seen").Err(); errors.Is(err, goredis.Nil) {
				t.Error("no marker at the seen key")
			}
		})
	}
}

// TestMemberWhoseNameHoldsANewlineCountsOnce: the members' approvals are
// counted apart from the names kept for decided_by, so a member called
// "x\ny" is one approval of the three needed, not two.
func TestMemberWhoseNameHoldsANewlineCountsOnce(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			s := bottest.Start(t, backend).Store(t)
			ctx := context.Background()
			p := quorumtest.Persona(3, 3)
			p.Members = []bot.Person{
				{Name: "x\ny", Identities: []bot.Identity{quorumtest.Bob}},
				{Name: "z", Identities: []bot.Identity{quorumtest.Carol}},
				{Name: "w", Identities: []bot.Identity{quorumtest.Dave}},
			}
			r := newRequest(t, s, p)
			for i, want := range []bot.Status{bot.Pending, bot.Pending, bot.Approved} {
				voter := []bot.Identity{quorumtest.Bob, quorumtest.Carol, quorumtest.Dave}[i]
				out, err := s.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: voter, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: fmt.Sprint("nostr:", i), At: time.Now()})
				if err != nil || out.Result != bot.Counted || out.Status != want {
					t.Fatalf("approval %d = %+v, %v; want counted, %s", i+1, out, err, want)
				}
			}
		})
	}
}
