package bot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

// Group commit of the audit chain: votes that arrive while a batch is on
// its way to Redis are chained together and sent in one pipeline.

// committee is a persona of n members, all of whom must approve (its
// owner does not vote).
func committee(n int) (bot.Persona, []bottest.Person) {
	owner := bottest.NewPerson("owner")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "owner", Identities: []bot.Identity{owner.Identity()}},
		ApprovalQuorum: n, DenyQuorum: n, Timeout: time.Minute}
	var people []bottest.Person
	for i := range n {
		m := bottest.NewPerson(fmt.Sprintf("m%d", i))
		people = append(people, m)
		p.Members = append(p.Members, bot.Person{Name: m.Name, Identities: []bot.Identity{m.Identity()}})
	}
	return p, people
}

// ballot is p's reaction to r, parsed as the HTTP API does.
func ballot(t *testing.T, p bottest.Person, r *bot.Request) bot.Ballot {
	t.Helper()
	raw := p.Reaction(r, "✅", time.Now())
	re, err := signing.ParseReaction(raw, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return re.Ballot(raw)
}

// exportChain is the store's whole chain as `signoff audit export` writes it.
func exportChain(t *testing.T, s *qredis.Store) []byte {
	t.Helper()
	var out bytes.Buffer
	var after uint64
	for {
		lines, err := s.AuditRecords(context.Background(), after, 500)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			out.Write(l)
			out.WriteByte('\n')
			after++
		}
		if len(lines) < 500 {
			return out.Bytes()
		}
	}
}

// voteRecords counts the chain's vote records per request and voter.
func voteRecords(recs []signing.Record) map[string]int {
	n := map[string]int{}
	for _, r := range recs {
		if r.Type == "vote" {
			var d struct {
				Voter bot.Identity `json:"voter"`
			}
			json.Unmarshal(r.Data, &d)
			n[r.RequestID+" "+d.Voter.ID]++
		}
	}
	return n
}

// closeAndCompare closes env's log (a last checkpoint) and checks that its
// file and the store's chain are the same bytes, and verify.
func closeAndCompare(t *testing.T, env *bottest.Env, path string) {
	t.Helper()
	if err := env.Audit.Close(); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	store := exportChain(t, env.Store)
	if !bytes.Equal(file, store) {
		t.Fatalf("the log's file (%d bytes) and the store's chain (%d bytes) differ", len(file), len(store))
	}
	rep := signing.VerifyChain(bytes.NewReader(file), signing.VerifyOptions{Signer: env.Key.PublicKey()})
	if !rep.OK() || rep.Uncovered != 0 {
		t.Fatalf("chain: break %v, truncated %v, %d uncovered", rep.Break, rep.Truncated, rep.Uncovered)
	}
}

// TestGroupCommitManyVotesAtOnce: every member of several committees
// votes at once, each reaction delivered twice: each vote is counted and
// recorded once, every request is approved with one decision record, the
// chain verifies and the log's file is the store's chain.
func TestGroupCommitManyVotesAtOnce(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			p, people := committee(6)
			srv := bottest.Start(t, backend)
			env := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
			if !env.Audit.Batches() {
				t.Fatal("the log on a Redis store does not batch")
			}
			var reqs []*bot.Request
			for i := range 8 {
				reqs = append(reqs, env.Submit(t, bot.NewRequest{Persona: "demo", Action: fmt.Sprintf("deploy %d", i)}))
			}
			var ballots []bot.Ballot
			for _, r := range reqs {
				for _, m := range people {
					b := ballot(t, m, r)
					ballots = append(ballots, b, b) // delivered twice
				}
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			counted := map[string]int{}
			for _, b := range ballots {
				wg.Go(func() {
					<-start
					out, err := env.Gateway.CastVote(context.Background(), b)
					if err != nil {
						t.Errorf("vote by %s: %v", b.Voter.ID, err)
						return
					}
					if out.Result == bot.Counted {
						mu.Lock()
						counted[out.RequestID+" "+b.Voter.ID]++
						mu.Unlock()
					}
				})
			}
			close(start)
			wg.Wait()
			for _, r := range reqs {
				if got := env.Await(t, r.ID); got.Status != bot.Approved || len(got.Votes) != len(people) {
					t.Fatalf("%s: %s with %d votes; want approved with %d", r.ID, got.Status, len(got.Votes), len(people))
				}
			}
			waitDecisionRecords(t, env, len(reqs))
			recs := env.Chain(t)
			n := voteRecords(recs)
			for _, r := range reqs {
				for _, m := range people {
					k := r.ID + " " + m.Key.PublicKey()
					if n[k] != 1 || counted[k] != 1 {
						t.Errorf("%s: %d vote record(s), counted %d time(s); want 1 and 1", k, n[k], counted[k])
					}
				}
			}
			closeAndCompare(t, env, env.AuditPath)
		})
	}
}

// waitDecisionRecords waits until the chain holds n decision records.
func waitDecisionRecords(t *testing.T, env *bottest.Env, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := 0
		for _, r := range env.Chain(t) {
			if r.Type == "decision" {
				got++
			}
		}
		if got == n {
			return
		}
		if got > n || time.Now().After(deadline) {
			t.Fatalf("%d decision records, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gatedStore, once armed, holds the first batch sent to it until open is
// closed (so the records that come meanwhile queue up as one batch), runs
// after(), if set, once that batch is done, and keeps the size of every
// batch from then on.
type gatedStore struct {
	*qredis.Store
	entered chan struct{}
	open    chan struct{}
	after   func()

	mu    sync.Mutex
	sizes []int
	armed bool
	first bool
}

func (g *gatedStore) arm() {
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
}

func newGatedStore(s *qredis.Store) *gatedStore {
	return &gatedStore{Store: s, entered: make(chan struct{}), open: make(chan struct{})}
}

func (g *gatedStore) CommitAuditBatch(ctx context.Context, batch []*bot.AuditCommit) {
	g.mu.Lock()
	first := g.armed && !g.first
	if g.armed {
		g.first = true
		g.sizes = append(g.sizes, len(batch))
	}
	g.mu.Unlock()
	if first {
		close(g.entered)
		<-g.open
	}
	g.Store.CommitAuditBatch(ctx, batch)
	if first && g.after != nil {
		g.after()
	}
}

func (g *gatedStore) batchSizes() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.sizes...)
}

// gatedEnv is a gateway like bottest's whose audit log's store is gated.
func gatedEnv(t *testing.T, srv *bottest.Server, p bot.Persona) (*bottest.Env, *gatedStore) {
	t.Helper()
	rdb := srv.Client(t)
	store := qredis.New(rdb, srv.Prefix)
	ctx := context.Background()
	if err := store.PutPersona(ctx, p); err != nil {
		t.Fatal(err)
	}
	key := signing.NewKey()
	gs := newGatedStore(store)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	audit, err := signing.OpenAuditWith(ctx, path, key, signing.AuditOptions{Store: gs, CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	g := &bot.Gateway{Store: store, Signer: key, Audit: audit, Outbox: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.Close()
		audit.Close()
	})
	return &bottest.Env{Gateway: g, Store: store, Redis: rdb, Key: key, Audit: audit, AuditPath: path}, gs
}

type castResult struct {
	out bot.VoteOutcome
	err error
}

// castQueued casts b once the log has `ahead` records waiting, and waits
// until b's record waits behind them.
func castQueued(env *bottest.Env, b bot.Ballot, ahead int) chan castResult {
	ch := make(chan castResult, 1)
	go func() {
		out, err := env.Gateway.CastVote(context.Background(), b)
		ch <- castResult{out, err}
	}()
	for env.Audit.Queued() < ahead+1 {
		time.Sleep(100 * time.Microsecond)
	}
	return ch
}

// TestGroupCommitDuplicateInTheMiddle: a batch of three votes whose middle
// one is a second delivery of the first (not in the chain): the third
// found the head moved, did nothing, and is chained again and recorded;
// the file is cut back after the first and the chain stays one.
func TestGroupCommitDuplicateInTheMiddle(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			p, people := committee(4)
			env, gs := gatedEnv(t, bottest.Start(t, backend), p)
			r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform apply"})
			// The gate holds the next batch: the first vote's.
			gs.arm()
			lead := castQueued(env, ballot(t, people[0], r), -1)
			<-gs.entered
			b1 := ballot(t, people[1], r)
			c1 := castQueued(env, b1, 0)
			dup := castQueued(env, b1, 1)
			c3 := castQueued(env, ballot(t, people[2], r), 2)
			close(gs.open)
			for i, ch := range []chan castResult{lead, c1, dup, c3} {
				res := <-ch
				want := bot.Counted
				if i == 2 {
					want = bot.Duplicate
				}
				if res.err != nil || res.out.Result != want {
					t.Errorf("vote %d = %+v, %v; want %s", i, res.out, res.err, want)
				}
			}
			if got := gs.batchSizes(); len(got) < 3 || got[1] != 3 || got[2] != 1 {
				t.Errorf("batches sent: %v; want the held one, then the three together, then the third again", got)
			}
			got, _ := env.Gateway.Get(context.Background(), r.ID)
			if got.Status != bot.Pending || len(got.Votes) != 3 {
				t.Errorf("request: %s with %d votes; want pending with 3", got.Status, len(got.Votes))
			}
			n := voteRecords(env.Chain(t))
			for i := range 3 {
				if k := r.ID + " " + people[i].Key.PublicKey(); n[k] != 1 {
					t.Errorf("m%d: %d vote records, want 1", i, n[k])
				}
			}
			closeAndCompare(t, env, env.AuditPath)
		})
	}
}

// TestGroupCommitFailureInTheMiddle: the middle vote of a batch fails in
// Redis (its request's hash is not what the script expects: a deadline
// that is not a number, found before the script writes anything): it is
// refused and not counted, and the vote after it, which found the head
// unmoved and did nothing, is chained again and recorded.
func TestGroupCommitFailureInTheMiddle(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			p, people := committee(4)
			srv := bottest.Start(t, backend)
			env, gs := gatedEnv(t, srv, p)
			r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform apply"})
			broken := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "rm -rf /"})
			hash := srv.Prefix + ":req:{" + broken.ID + "}"
			if err := env.Redis.HSet(context.Background(), hash, "due", "soon").Err(); err != nil {
				t.Fatal(err)
			}
			gs.arm()
			lead := castQueued(env, ballot(t, people[0], r), -1)
			<-gs.entered
			c1 := castQueued(env, ballot(t, people[1], r), 0)
			bad := castQueued(env, ballot(t, people[0], broken), 1)
			c3 := castQueued(env, ballot(t, people[2], r), 2)
			close(gs.open)
			for i, ch := range []chan castResult{lead, c1, bad, c3} {
				res := <-ch
				if i == 2 {
					if bot.ErrorCode(res.err) != bot.EUnavailable {
						t.Errorf("the vote that failed in Redis = %+v, %v; want unavailable", res.out, res.err)
					}
					continue
				}
				if res.err != nil || res.out.Result != bot.Counted {
					t.Errorf("vote %d = %+v, %v; want counted", i, res.out, res.err)
				}
			}
			if got, _ := env.Gateway.Get(context.Background(), r.ID); len(got.Votes) != 3 {
				t.Errorf("request: %d votes, want 3", len(got.Votes))
			}
			if got, _ := env.Gateway.Get(context.Background(), broken.ID); len(got.Votes) != 0 {
				t.Errorf("the broken request: %d votes, want none", len(got.Votes))
			}
			n := voteRecords(env.Chain(t))
			if n[broken.ID+" "+people[0].Key.PublicKey()] != 0 {
				t.Error("the refused vote has a record")
			}
			closeAndCompare(t, env, env.AuditPath)
		})
	}
}

// TestGroupCommitAuditUnwritable: the stream cannot be written any more
// while a batch of votes waits: every vote of the batch is refused and
// none is counted; once it can, the same votes count, once each.
func TestGroupCommitAuditUnwritable(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			p, people := committee(4)
			srv := bottest.Start(t, backend)
			env, gs := gatedEnv(t, srv, p)
			r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform apply"})
			var restore func()
			gs.after = func() { restore = breakAuditStream(t, env, srv.Prefix) }
			gs.arm()
			lead := castQueued(env, ballot(t, people[0], r), -1)
			<-gs.entered
			var bs []bot.Ballot
			var chs []chan castResult
			for i := 1; i < 4; i++ {
				b := ballot(t, people[i], r)
				bs = append(bs, b)
				chs = append(chs, castQueued(env, b, i-1))
			}
			close(gs.open)
			if res := <-lead; res.err != nil || res.out.Result != bot.Counted {
				t.Fatalf("the vote before the break = %+v, %v; want counted", res.out, res.err)
			}
			for i, ch := range chs {
				if res := <-ch; bot.ErrorCode(res.err) != bot.EUnavailable {
					t.Errorf("vote %d with the audit unwritable = %+v, %v; want unavailable", i+1, res.out, res.err)
				}
			}
			if got, _ := env.Gateway.Get(context.Background(), r.ID); got.Status != bot.Pending || len(got.Votes) != 1 {
				t.Fatalf("after the refused votes: %s with %d votes; want pending with 1", got.Status, len(got.Votes))
			}
			restore()
			for i, b := range bs {
				out, err := env.Gateway.CastVote(context.Background(), b)
				if err != nil || out.Result != bot.Counted {
					t.Fatalf("vote %d once the log works = %+v, %v; want counted", i+1, out, err)
				}
			}
			if got := env.Await(t, r.ID); got.Status != bot.Approved {
				t.Fatalf("status %s, want approved", got.Status)
			}
			waitDecisionRecords(t, env, 1)
			n := voteRecords(env.Chain(t))
			for i := range people {
				if k := r.ID + " " + people[i].Key.PublicKey(); n[k] != 1 {
					t.Errorf("m%d: %d vote records, want 1", i, n[k])
				}
			}
			closeAndCompare(t, env, env.AuditPath)
		})
	}
}

// TestGroupCommitTwoReplicas: two gateways on one store, each with its
// own log, take the votes of the same requests at once: every vote is
// recorded once, in one chain that verifies, and each replica's file is a
// prefix of it.
func TestGroupCommitTwoReplicas(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			p, people := committee(6)
			srv := bottest.Start(t, backend)
			envs := []*bottest.Env{
				bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil),
				bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil),
			}
			var reqs []*bot.Request
			for i := range 6 {
				reqs = append(reqs, envs[i%2].Submit(t, bot.NewRequest{Persona: "demo", Action: fmt.Sprintf("deploy %d", i)}))
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i, r := range reqs {
				for j, m := range people {
					b := ballot(t, m, r)
					env := envs[(i+j)%2]
					wg.Go(func() {
						<-start
						if out, err := env.Gateway.CastVote(context.Background(), b); err != nil || out.Result != bot.Counted {
							t.Errorf("vote by %s = %+v, %v; want counted", b.Voter.ID, out, err)
						}
					})
				}
			}
			close(start)
			wg.Wait()
			for _, r := range reqs {
				if got := envs[0].Await(t, r.ID); got.Status != bot.Approved {
					t.Fatalf("%s: %s, want approved", r.ID, got.Status)
				}
			}
			waitDecisionRecords(t, envs[0], len(reqs))
			n := voteRecords(envs[0].Chain(t))
			for _, r := range reqs {
				for _, m := range people {
					if k := r.ID + " " + m.Key.PublicKey(); n[k] != 1 {
						t.Errorf("%s: %d vote records, want 1", k, n[k])
					}
				}
			}
			for _, env := range envs {
				if err := env.Audit.Close(); err != nil {
					t.Fatal(err)
				}
			}
			all := exportChain(t, envs[0].Store)
			if rep := signing.VerifyChain(bytes.NewReader(all), signing.VerifyOptions{Signer: envs[0].Key.PublicKey()}); !rep.OK() || rep.Uncovered != 0 {
				t.Fatalf("chain: break %v, truncated %v, %d uncovered", rep.Break, rep.Truncated, rep.Uncovered)
			}
			for i, env := range envs {
				file, _ := os.ReadFile(env.AuditPath)
				if !bytes.HasPrefix(all, file) {
					t.Errorf("replica %d's file is not a prefix of the store's chain", i)
				}
			}
		})
	}
}

// TestGroupCommitScriptFailsAfterItsRecord: a vote's script fails after
// it appended its record (the outbox it enqueues the decision in is not a
// stream), so it reports no record, and the vote after it in the batch
// finds the head it expects and joins. The file follows the store at
// once: the two records are in both, in one chain.
func TestGroupCommitScriptFailsAfterItsRecord(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			p, people := committee(2)
			srv := bottest.Start(t, backend)
			env, gs := gatedEnv(t, srv, p)
			r1 := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform apply"})
			r2 := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform plan"})
			gs.arm()
			lead := castQueued(env, ballot(t, people[0], r1), -1)
			<-gs.entered
			deciding := castQueued(env, ballot(t, people[1], r1), 0)
			after := castQueued(env, ballot(t, people[0], r2), 1)
			ctx := context.Background()
			outbox := srv.Prefix + ":{outbox}"
			if err := env.Redis.Rename(ctx, outbox, outbox+":saved").Err(); err != nil {
				t.Fatal(err)
			}
			if err := env.Redis.Set(ctx, outbox, "not a stream", 0).Err(); err != nil {
				t.Fatal(err)
			}
			close(gs.open)
			if res := <-lead; res.err != nil || res.out.Result != bot.Counted {
				t.Fatalf("first vote = %+v, %v; want counted", res.out, res.err)
			}
			if res := <-deciding; res.err == nil {
				t.Fatalf("the vote whose script failed = %+v; want an error", res.out)
			}
			if res := <-after; res.err != nil || res.out.Result != bot.Counted {
				t.Fatalf("the vote after it = %+v, %v; want counted", res.out, res.err)
			}
			file, err := os.ReadFile(env.AuditPath)
			if err != nil {
				t.Fatal(err)
			}
			if store := exportChain(t, env.Store); !bytes.Equal(file, store) {
				t.Fatalf("the file (%d bytes) is not the store's chain (%d bytes) after the batch", len(file), len(store))
			}
			n := voteRecords(env.Chain(t))
			for _, k := range []string{r1.ID + " " + people[0].Key.PublicKey(), r1.ID + " " + people[1].Key.PublicKey(), r2.ID + " " + people[0].Key.PublicKey()} {
				if n[k] != 1 {
					t.Errorf("%s: %d vote records, want 1", k, n[k])
				}
			}
			env.Redis.Del(ctx, outbox)
			env.Redis.Rename(ctx, outbox+":saved", outbox)
		})
	}
}

// TestFileOnlyLogStillCommitsOneAtATime: a log with no shared chain (the
// file alone) on a Redis store does not batch; votes at once are each
// recorded once in a file that verifies.
func TestFileOnlyLogStillCommitsOneAtATime(t *testing.T) {
	p, people := committee(6)
	srv := bottest.Start(t, "embedded")
	rdb := srv.Client(t)
	store := qredis.New(rdb, srv.Prefix)
	ctx := context.Background()
	if err := store.PutPersona(ctx, p); err != nil {
		t.Fatal(err)
	}
	key := signing.NewKey()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	audit, err := signing.OpenAudit(path, key)
	if err != nil {
		t.Fatal(err)
	}
	if audit.Batches() {
		t.Fatal("a file-only log batches")
	}
	g := &bot.Gateway{Store: store, Signer: key, Audit: audit, Outbox: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	env := &bottest.Env{Gateway: g, Store: store, Redis: rdb, Key: key, Audit: audit, AuditPath: path}
	var reqs []*bot.Request
	for i := range 4 {
		reqs = append(reqs, env.Submit(t, bot.NewRequest{Persona: "demo", Action: fmt.Sprintf("deploy %d", i)}))
	}
	var wg sync.WaitGroup
	for _, r := range reqs {
		for _, m := range people {
			b := ballot(t, m, r)
			wg.Go(func() {
				if out, err := g.CastVote(ctx, b); err != nil || out.Result != bot.Counted {
					t.Errorf("vote = %+v, %v; want counted", out, err)
				}
			})
		}
	}
	wg.Wait()
	for _, r := range reqs {
		if got := env.Await(t, r.ID); got.Status != bot.Approved {
			t.Fatalf("%s: %s, want approved", r.ID, got.Status)
		}
	}
	g.Close()
	if err := audit.Close(); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rep := signing.VerifyChain(bytes.NewReader(file), signing.VerifyOptions{Signer: key.PublicKey()})
	if !rep.OK() || rep.Uncovered != 0 {
		t.Fatalf("file: break %v, truncated %v, %d uncovered", rep.Break, rep.Truncated, rep.Uncovered)
	}
	var recs []signing.Record
	for _, line := range bytes.Split(bytes.TrimSpace(file), []byte("\n")) {
		var r signing.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	n := voteRecords(recs)
	decisions := 0
	for _, r := range recs {
		if r.Type == "decision" {
			decisions++
		}
	}
	for _, r := range reqs {
		for _, m := range people {
			if k := r.ID + " " + m.Key.PublicKey(); n[k] != 1 {
				t.Errorf("%s: %d vote records, want 1", k, n[k])
			}
		}
	}
	if decisions != len(reqs) {
		t.Errorf("%d decision records, want %d", decisions, len(reqs))
	}
}
