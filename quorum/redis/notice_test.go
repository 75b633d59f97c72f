package redis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// heard is one call of a WatchNotices fn.
type heard struct {
	id    string
	known func() *bot.Request
}

// watchNotices runs s.WatchNotices until the test ends and returns what
// it hears, once the subscription is made.
func watchNotices(t *testing.T, s *qredis.Store) <-chan heard {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan heard, 100)
	var wg sync.WaitGroup
	wg.Go(func() {
		s.WatchNotices(ctx, func(id string, known func() *bot.Request) { ch <- heard{id, known} })
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	if h := next(t, ch); h.id != "" {
		t.Fatalf("first call = %q, want the subscription's", h.id)
	}
	return ch
}

func next(t *testing.T, ch <-chan heard) heard {
	t.Helper()
	select {
	case h := <-ch:
		return h
	case <-time.After(10 * time.Second):
		t.Fatal("nothing heard in 10s")
		return heard{}
	}
}

// nothingMore publishes a change of another request and checks it is the
// next thing heard: whatever was published before it called nothing.
func nothingMore(t *testing.T, s *qredis.Store, ch <-chan heard) {
	t.Helper()
	if err := s.Changed(context.Background(), "sentinel"); err != nil {
		t.Fatal(err)
	}
	if h := next(t, ch); h.id != "sentinel" {
		t.Fatalf("heard %q (known %v) before the sentinel, want nothing", h.id, h.known != nil)
	}
}

// sameAsStored checks got is what Redis holds for its request.
func sameAsStored(t *testing.T, s *qredis.Store, got *bot.Request) {
	t.Helper()
	want := stored(t, s, got.ID)
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) || got.Seen != want.Seen {
		t.Fatalf("from the notice (seen %d):\n%s\nin Redis (seen %d):\n%s", got.Seen, g, want.Seen, w)
	}
}

// TestVoteNoticeCarriesTheVote: a replica that read a request hears the
// next vote on it, cast through another replica, as the request with the
// vote added — exactly what Redis holds — with no command sent, and
// Unchanged answers from it with none either; the answer is its own copy.
// Then what must read does: a vote after one it missed (a gap), messages
// added, a decision.
func TestVoteNoticeCarriesTheVote(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			s, hook, rdb := srv.CountedStore(t) // the waiters' replica
			w := srv.Store(t)                   // the voters'
			ctx := context.Background()
			ch := watchNotices(t, s)
			p, voters := manyMembers(6)
			r := newRequest(t, w, p)
			vote := func(i int) {
				t.Helper()
				out, err := w.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: voters[i], Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: fmt.Sprint("v", i)})
				if err != nil || out.Result != bot.Counted || out.Decided {
					t.Fatalf("vote %d = %+v, %v; want counted, pending", i, out, err)
				}
			}
			if _, err := s.Get(ctx, r.ID); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				hook.Reset()
				vote(i)
				h := next(t, ch)
				if h.id != r.ID || h.known == nil {
					t.Fatalf("vote %d heard as %q, known %v; want the request, known", i, h.id, h.known != nil)
				}
				got := h.known()
				if hook.Trips() != 0 {
					t.Errorf("vote %d: the replica sent %s, want nothing", i, hook)
				}
				sameAsStored(t, w, got)
				spoil(got)
				sameAsStored(t, w, h.known())
				if same, err := s.Unchanged(ctx, r.ID, i+1); err != nil || !same || hook.Trips() != 0 {
					t.Errorf("Unchanged(%d) after its notice = %v, %v, sending %s; want true from the notice, nothing sent", i+1, same, err, hook)
				}
				if same, _ := s.Unchanged(ctx, r.ID, i); same {
					t.Errorf("Unchanged(%d) with %d stored = true", i, i+1)
				}
			}

			// A vote stored with no notice heard (as when one is lost), then
			// the next one: a gap, read.
			k := s.RequestKeys(r.ID)
			if err := rdb.RPush(ctx, k[1], "ignored\nno notice\n"+`{"voter": {"platform": "nostr", "id": "ee"}, "vote": "approve"}`).Err(); err != nil {
				t.Fatal(err)
			}
			vote(2)
			if h := next(t, ch); h.id != r.ID || h.known != nil {
				t.Fatalf("the vote after a gap heard as %q, known %v; want the request, to read", h.id, h.known != nil)
			}
			got, err := s.Get(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			sameAsStored(t, w, got)

			// Messages added: nothing to wake, and the next vote reads (the
			// replica has not seen them); after that read, notices again.
			if err := w.AddMessages(ctx, r.ID, []bot.MessageRef{{Platform: bot.Slack, Channel: "C1", ID: "1.2"}}); err != nil {
				t.Fatal(err)
			}
			nothingMore(t, w, ch)
			vote(3)
			if h := next(t, ch); h.id != r.ID || h.known != nil {
				t.Fatalf("the vote after messages added heard as %q, known %v; want the request, to read", h.id, h.known != nil)
			}
			if _, err := s.Get(ctx, r.ID); err != nil {
				t.Fatal(err)
			}
			vote(4)
			if h := next(t, ch); h.known == nil {
				t.Fatal("the vote after a read was not known")
			} else {
				got := h.known()
				sameAsStored(t, w, got)
				if len(got.Messages) != 2 {
					t.Fatalf("%d messages, want 2", len(got.Messages))
				}
			}

			// The decision is read, and Unchanged no longer answers from
			// the last vote's notice.
			if ok, err := w.Resolve(ctx, r.ID, bot.Denied, "test", time.Now()); err != nil || !ok {
				t.Fatalf("resolve = %v, %v", ok, err)
			}
			if h := next(t, ch); h.id != r.ID || h.known != nil {
				t.Fatalf("the decision heard as %q, known %v; want the request, to read", h.id, h.known != nil)
			}
			hook.Reset()
			if same, err := s.Unchanged(ctx, r.ID, 6); err != nil || same || hook.Count("LLEN", r.ID) != 1 {
				t.Errorf("Unchanged after the decision = %v, %v, sending %s; want false, from Redis", same, err, hook)
			}
		})
	}
}

// TestForgedNoticesChangeNothing: what anyone who may publish on the
// server can send on the notice channel — a vote notice with a made-up
// vote and a wrong tag, a real one sent again, malformed ones — never
// becomes an answer: a notice that names a request only makes its
// waiters read, and the next real vote is still known as it is stored.
func TestForgedNoticesChangeNothing(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			rdb := srv.Client(t)
			s := qredis.New(rdb, srv.Prefix)
			w := qredis.New(srv.Client(t), srv.Prefix)
			ctx := context.Background()
			ch := watchNotices(t, s)
			p, voters := manyMembers(6)
			r := newRequest(t, w, p)
			if _, err := s.Get(ctx, r.ID); err != nil {
				t.Fatal(err)
			}
			// A copy of the real notices, to send one again.
			spy := srv.Client(t).Subscribe(ctx, s.NoticeChannel())
			defer spy.Close()
			if _, err := spy.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			vote := func(i int) heard {
				t.Helper()
				if _, err := w.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: voters[i], Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: fmt.Sprint("v", i)}); err != nil {
					t.Fatal(err)
				}
				return next(t, ch)
			}
			if h := vote(0); h.known == nil {
				t.Fatal("the first vote was not known")
			}
			real, err := spy.ReceiveMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			spy.Close() // unread, it would hold up the embedded server's publishes
			owner := `{"voter": {"platform": "nostr", "id": "ff"}, "name": "owner", "vote": "approve", "at": "2026-01-01T00:00:00Z"}`
			forged := []struct {
				name, msg string
				wakes     bool // names the request: its waiters read
			}{
				{"wrong tag", "v\n" + strings.Repeat("0", 40) + "\n" + r.ID + "\n2\ncounted\n\n" + owner, true},
				{"tag of another line", strings.Replace(real.Payload, `"vote":"approve"`, `"vote":"deny"`, 1), true},
				{"sent again", real.Payload, true},
				{"index with a sign", "v\n" + strings.Repeat("0", 40) + "\n" + r.ID + "\n+2\ncounted\n\n" + owner, true},
				{"not a stored result", "v\n" + strings.Repeat("0", 40) + "\n" + r.ID + "\n2\ndecided\n\n" + owner, true},
				{"vote not JSON", "v\n" + strings.Repeat("0", 40) + "\n" + r.ID + "\n2\ncounted\n\n{", true},
				{"no line", "v\n" + strings.Repeat("0", 40) + "\n" + r.ID + "\n2", true},
				{"short tag", "v\nabc\n" + r.ID + "\n2\ncounted\n\n" + owner, true},
				{"messages count not a number", "m\n" + r.ID + "\nmany", true},
				{"unknown kind", "x\n" + r.ID, false},
				{"empty", "", false},
				{"bare id", r.ID, false},
			}
			for _, f := range forged {
				if err := rdb.Publish(ctx, s.NoticeChannel(), f.msg).Err(); err != nil {
					t.Fatal(err)
				}
				if f.wakes {
					if h := next(t, ch); h.id != r.ID || h.known != nil {
						t.Fatalf("%s: heard %q, known %v; want the request, to read", f.name, h.id, h.known != nil)
					}
				}
				nothingMore(t, w, ch)
				if same, err := s.Unchanged(ctx, r.ID, 1); err != nil || !same {
					t.Fatalf("%s: Unchanged(1) = %v, %v; want true", f.name, same, err)
				}
			}
			if h := vote(1); h.known == nil {
				t.Fatal("the vote after the forgeries was not known")
			} else {
				got := h.known()
				sameAsStored(t, w, got)
			}
		})
	}
}

// TestResubscribeForgetsNotices: after the subscription is cut and made
// again (notices in between may be lost), a request read before is not
// extended by the next notice (it is read), and Unchanged asks Redis.
// Needs a redis-server of its own (CLIENT KILL cuts every subscription
// on the server).
func TestResubscribeForgetsNotices(t *testing.T) {
	srv := bottest.StartPrivate(t)
	s, hook, _ := srv.CountedStore(t)
	w := qredis.New(srv.Client(t), srv.Prefix)
	ctx := context.Background()
	ch := watchNotices(t, s)
	p, voters := manyMembers(6)
	r := newRequest(t, w, p)
	vote := func(i int) heard {
		t.Helper()
		if _, err := w.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: voters[i], Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: fmt.Sprint("v", i)}); err != nil {
			t.Fatal(err)
		}
		return next(t, ch)
	}
	if _, err := s.Get(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if h := vote(0); h.known == nil {
		t.Fatal("the first vote was not known")
	}
	if err := srv.Client(t).Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	if h := next(t, ch); h.id != "" {
		t.Fatalf("heard %q, want the resubscription", h.id)
	}
	hook.Reset()
	if same, err := s.Unchanged(ctx, r.ID, 1); err != nil || !same || hook.Count("LLEN", r.ID) != 1 {
		t.Errorf("Unchanged(1) after resubscribing = %v, %v, sending %s; want true, from Redis", same, err, hook)
	}
	if h := vote(1); h.id != r.ID || h.known != nil {
		t.Fatalf("the vote after resubscribing heard as %q, known %v; want the request, to read", h.id, h.known != nil)
	}
	if _, err := s.Get(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if h := vote(2); h.known == nil {
		t.Fatal("the vote after a read in the new subscription was not known")
	} else {
		sameAsStored(t, w, h.known())
	}
}

// TestNoticesBeforeAReadEnds: votes and messages land while another
// replica reads the request over and over; every request it knows from a
// notice is what Redis held at some moment (the votes so far and every
// message added before the next), never a mix of a read and a later
// change it did not see.
func TestNoticesBeforeAReadEnds(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			s := qredis.New(srv.Client(t), srv.Prefix)
			w := qredis.New(srv.Client(t), srv.Prefix)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := watchNotices(t, s)
			p, voters := manyMembers(40)
			r := newRequest(t, w, p)
			var reads sync.WaitGroup
			reads.Go(func() {
				for ctx.Err() == nil {
					s.Get(ctx, r.ID)
				}
			})
			// After vote i (0-based), i/4 messages had been added before it.
			for i := range voters {
				if i%4 == 0 {
					if err := w.AddMessages(ctx, r.ID, []bot.MessageRef{{Platform: bot.Slack, Channel: "C1", ID: fmt.Sprint(i)}}); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := w.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: voters[i], Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: fmt.Sprint("v", i)}); err != nil {
					t.Fatal(err)
				}
			}
			known := 0
			for range voters {
				h := next(t, ch)
				if h.known == nil {
					continue
				}
				known++
				got := h.known()
				// Right after vote s, or (a notice later than a read, which
				// it answers) just before vote s+1, once its message is in.
				lo, hi := 1+(got.Seen+3)/4, 1+(got.Seen+3)/4
				if got.Seen%4 == 0 {
					hi++
				}
				if m := len(got.Messages); len(got.Votes) != got.Seen || m < lo || m > hi {
					t.Fatalf("known with %d answers: %d votes, %d messages; want %d votes, %d to %d messages", got.Seen, len(got.Votes), m, got.Seen, lo, hi)
				}
				for j, v := range got.Votes {
					if v.Voter != voters[j] {
						t.Fatalf("known after vote %d: vote %d is %v's, want %v's", got.Seen, j, v.Voter, voters[j])
					}
				}
			}
			cancel()
			reads.Wait()
			t.Logf("%d of %d votes known from their notice", known, len(voters))
		})
	}
}
