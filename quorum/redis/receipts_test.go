package redis_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/quorum/quorumtest"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// TestSavedReceiptIsKnownWithoutARead: the store that keeps a receipt,
// having read the decided request before, hands the request with it in
// fresh copies equal to a read, sending nothing more. It does not when it
// cannot be sure: another receipt was kept first, an answer was stored
// after its read, or it never read the request.
func TestSavedReceiptIsKnownWithoutARead(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			s, hook, _ := srv.CountedStore(t)
			other := srv.Store(t)
			ctx := context.Background()
			p := quorumtest.Persona(0, 1)
			decided := func(dedup string) *bot.Request {
				t.Helper()
				r := newRequest(t, s, p)
				out, err := s.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: quorumtest.Alice, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: dedup})
				if err != nil || !out.Decided {
					t.Fatalf("alice's vote = %+v, %v; want it to decide", out, err)
				}
				return r
			}
			raw := json.RawMessage(`{"receipt":"first"}`)

			r := decided("a")
			if _, err := s.Get(ctx, r.ID); err != nil { // the seal's read
				t.Fatal(err)
			}
			known, err := s.SaveReceipt(ctx, r.ID, raw)
			if err != nil || known == nil {
				t.Fatalf("save receipt = known %v, %v; want the request known", known != nil, err)
			}
			before := hook.Trips()
			got, again := known(), known()
			if n := hook.Trips() - before; n != 0 {
				t.Errorf("known sent %d commands, want none", n)
			}
			want, err := other.Get(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
				t.Errorf("known gave\n%s\nwant what a read gives\n%s", g, w)
			}
			if got.Seen != want.Seen || string(got.Receipt) != string(raw) {
				t.Errorf("known: Seen %d receipt %s; want Seen %d receipt %s", got.Seen, got.Receipt, want.Seen, raw)
			}
			spoil(got)
			if g, w := jsonOf(t, again), jsonOf(t, want); g != w {
				t.Errorf("a copy known gave shares what another's caller changed:\n%s", g)
			}

			// Another receipt was kept first: this one is not the request's.
			if known, err := s.SaveReceipt(ctx, r.ID, json.RawMessage(`{"receipt":"second"}`)); err != nil || known != nil {
				t.Errorf("a second receipt: known %v, %v; want nil (the first stands)", known != nil, err)
			}

			// A stranger's answer stored after the read: the read is behind.
			r = decided("b")
			if _, err := s.Get(ctx, r.ID); err != nil {
				t.Fatal(err)
			}
			out, err := other.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: quorumtest.NostrID("stranger"), Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: "c"})
			if err != nil || !out.Recorded {
				t.Fatalf("the stranger's answer = %+v, %v; want it stored", out, err)
			}
			if known, err := s.SaveReceipt(ctx, r.ID, raw); err != nil || known != nil {
				t.Errorf("an answer stored after the read: known %v, %v; want nil (read it)", known != nil, err)
			}

			// Never read here.
			r = decided("d")
			if known, err := other.SaveReceipt(ctx, r.ID, raw); err != nil || known != nil {
				t.Errorf("a request this store never read: known %v, %v; want nil", known != nil, err)
			}
		})
	}
}

func jsonOf(t *testing.T, r *bot.Request) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReceiptNoticeOnTheSavingReplicaNeedsNoRead: the receipt's notice is
// heard, on the replica that saved it, with the request as a read would
// give it, whether it comes before the save's reply or after; another
// replica hears it as a change to read. It reads when the notice is not
// that receipt's (forged, or another receipt's), when an answer was
// stored after the saving replica's read, and once its answer was taken.
func TestReceiptNoticeOnTheSavingReplicaNeedsNoRead(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			s, hook, rdb := srv.CountedStore(t) // the sealing replica
			other := srv.Store(t)
			ctx := context.Background()
			here, there := watchNotices(t, s), watchNotices(t, other)
			p := quorumtest.Persona(0, 1)
			decide := func(dedup string) *bot.Request {
				t.Helper()
				r := newRequest(t, other, p)
				if out, err := other.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: quorumtest.Alice, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: dedup}); err != nil || !out.Decided {
					t.Fatalf("alice's vote = %+v, %v; want it to decide", out, err)
				}
				for _, ch := range []<-chan heard{here, there} { // the decision
					if h := next(t, ch); h.id != r.ID || h.known != nil {
						t.Fatalf("heard %q (known %v), want %s's decision, to read", h.id, h.known != nil, r.ID)
					}
				}
				if _, err := s.Get(ctx, r.ID); err != nil { // the seal's read
					t.Fatal(err)
				}
				return r
			}
			forge := func(r *bot.Request) {
				t.Helper()
				msg := "r\n" + strings.Repeat("0", 40) + "\n" + r.ID + "\n1\n1"
				if err := rdb.Publish(ctx, s.NoticeChannel(), msg).Err(); err != nil {
					t.Fatal(err)
				}
				for _, ch := range []<-chan heard{here, there} {
					if h := next(t, ch); h.id != r.ID || h.known != nil {
						t.Fatalf("a forged receipt notice: heard %q (known %v), want %s to read", h.id, h.known != nil, r.ID)
					}
				}
			}
			saved := func(r *bot.Request, receipt string, wantKnown bool) {
				t.Helper()
				known, err := s.SaveReceipt(ctx, r.ID, json.RawMessage(receipt))
				if err != nil || (known != nil) != wantKnown {
					t.Fatalf("save receipt: known %v, %v; want known %v", known != nil, err, wantKnown)
				}
				h := next(t, here)
				if h.id != r.ID || (h.known != nil) != wantKnown {
					t.Fatalf("the saving replica heard %q (known %v), want %s (known %v)", h.id, h.known != nil, r.ID, wantKnown)
				}
				if wantKnown {
					before := hook.Trips()
					sameAsStored(t, other, h.known())
					if n := hook.Trips() - before; n != 0 {
						t.Errorf("the receipt notice's request took %d commands, want none", n)
					}
				}
				if h := next(t, there); h.id != r.ID || h.known != nil {
					t.Errorf("another replica heard %q (known %v), want %s to read", h.id, h.known != nil, r.ID)
				}
			}

			r := decide("a")
			forge(r) // before the save: takes nothing
			saved(r, `{"receipt":"a"}`, true)
			forge(r) // after: the answer was taken

			// A stranger's answer stored after the read: the read is behind.
			r = decide("b")
			out, err := other.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: quorumtest.NostrID("stranger"), Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: "c"})
			if err != nil || !out.Recorded {
				t.Fatalf("the stranger's answer = %+v, %v; want it stored", out, err)
			}
			for _, ch := range []<-chan heard{here, there} { // its change
				next(t, ch)
			}
			saved(r, `{"receipt":"b"}`, false)

			// Another replica's receipt kept first: this one's notice never comes.
			r = decide("d")
			if _, err := other.SaveReceipt(ctx, r.ID, json.RawMessage(`{"receipt":"other"}`)); err != nil {
				t.Fatal(err)
			}
			if h := next(t, here); h.id != r.ID || h.known != nil {
				t.Fatalf("another replica's receipt: heard %q (known %v), want %s to read", h.id, h.known != nil, r.ID)
			}
			next(t, there)
			if known, err := s.SaveReceipt(ctx, r.ID, json.RawMessage(`{"receipt":"late"}`)); err != nil || known != nil {
				t.Errorf("a receipt not kept: known %v, %v; want nil", known != nil, err)
			}
			nothingMore(t, s, here)
		})
	}
}

// beforeScripts runs before, when set, ahead of each script call.
type beforeScripts struct {
	mu     sync.Mutex
	before func()
}

func (h *beforeScripts) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (h *beforeScripts) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}
func (h *beforeScripts) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		var f func()
		if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			h.mu.Lock()
			f, h.before = h.before, nil
			h.mu.Unlock()
		}
		if f != nil {
			f()
		}
		return next(ctx, cmd)
	}
}

// TestReceiptNoticeThatIsNotTheSavesIsRead: while a receipt is being
// saved, a receipt notice of the request that names another receipt, or
// other lengths, is read (and takes the save's answer with it: the save's
// own notice is then read too).
func TestReceiptNoticeThatIsNotTheSavesIsRead(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			rdb := srv.Client(t)
			hook := &beforeScripts{}
			rdb.AddHook(hook)
			s := qredis.New(rdb, srv.Prefix)
			ctx := context.Background()
			here := watchNotices(t, s)
			p := quorumtest.Persona(0, 1)
			const receipt = `{"receipt":"mine"}`
			sum := sha1.Sum([]byte(receipt))
			mine := hex.EncodeToString(sum[:])
			for _, tc := range []struct{ name, hash, lengths string }{
				{"another receipt", strings.Repeat("0", 40), "1\n1"},
				{"other lengths", mine, "2\n1"},
			} {
				r := newRequest(t, s, p)
				if out, err := s.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: quorumtest.Alice, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: tc.name}); err != nil || !out.Decided {
					t.Fatalf("alice's vote = %+v, %v", out, err)
				}
				next(t, here) // the decision
				if _, err := s.Get(ctx, r.ID); err != nil {
					t.Fatal(err)
				}
				hook.mu.Lock()
				hook.before = func() {
					if err := srv.Client(t).Publish(ctx, s.NoticeChannel(), "r\n"+tc.hash+"\n"+r.ID+"\n"+tc.lengths).Err(); err != nil {
						t.Error(err)
					}
					if h := next(t, here); h.id != r.ID || h.known != nil {
						t.Errorf("%s: heard %q (known %v), want %s to read", tc.name, h.id, h.known != nil, r.ID)
					}
				}
				hook.mu.Unlock()
				if known, err := s.SaveReceipt(ctx, r.ID, json.RawMessage(receipt)); err != nil || known == nil {
					t.Fatalf("%s: save receipt: known %v, %v; want known (it was kept)", tc.name, known != nil, err)
				}
				if h := next(t, here); h.id != r.ID || h.known != nil {
					t.Errorf("%s: the save's own notice: known %v, want a read (its answer was taken)", tc.name, h.known != nil)
				}
			}
		})
	}
}
