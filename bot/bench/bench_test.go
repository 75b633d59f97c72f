package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/signing"
)

// The floor's pieces and the vote path, as Go benchmarks: run them with
// SIGNOFF_TEST_REDIS_URL set for the real Redis beside the embedded one,
// and compare runs with benchstat.

// BenchmarkFloor is what a vote cannot avoid, piece by piece.
func BenchmarkFloor(b *testing.B) {
	owner := signing.NewKey()
	b.Run("http", func(b *testing.B) {
		f := benchFloor(b, owner)
		c := &http.Client{Transport: transport(4)}
		for b.Loop() {
			resp, err := c.Post(f.srv.URL+"/v1/nostr/events", "application/json", bytes.NewReader(f.body))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("verify", func(b *testing.B) {
		f := benchFloor(b, owner)
		for b.Loop() {
			if _, err := signing.ParseReaction(f.body, f.at); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, backend := range bottest.Backends() {
		b.Run("redis-ping/"+backend, func(b *testing.B) {
			rdb := bottest.Start(b, backend).Client(b)
			ctx := context.Background()
			for b.Loop() {
				if err := rdb.Ping(ctx).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchFloor(b *testing.B, k *signing.Key) *floor {
	b.Helper()
	srv := bottest.Start(b, "embedded")
	f, err := newFloor(context.Background(), srv.Client(b), []*signing.Key{k})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.close(context.Background()) })
	return f
}

// BenchmarkVotePath is one decisive reaction through the real HTTP API of
// an in-process gateway (httpapi on bot.Gateway on the Redis store, audit
// and outbox on): POST /v1/nostr/events → verify → tally → seal → answer.
// Its requests are made before the timer starts.
func BenchmarkVotePath(b *testing.B) {
	for _, backend := range bottest.Backends() {
		b.Run(backend, func(b *testing.B) {
			srv := bottest.Start(b, backend)
			owner := bottest.NewPerson("owner")
			p := bot.Persona{Name: "bench", Owner: &bot.Person{Name: "owner", Identities: []bot.Identity{owner.Identity()}}, DenyQuorum: 1, Timeout: time.Hour}
			env := bottest.NewOn(b, srv.Client(b), srv.Prefix, p, nil)
			api := httptest.NewServer((&httpapi.Server{Gateway: env.Gateway}).Handler())
			b.Cleanup(api.Close)
			c := &http.Client{Transport: transport(4)}
			now := time.Now()
			raws := make([][]byte, b.N)
			for i := range b.N {
				r := env.Submit(b, bot.NewRequest{Persona: "bench", Action: fmt.Sprint("deploy ", i)})
				raws[i] = owner.Reaction(r, "✅", now)
			}
			b.ResetTimer()
			for i := range b.N {
				resp, err := c.Post(api.URL+"/v1/nostr/events", "application/json", bytes.NewReader(raws[i]))
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"approved"`)) {
					b.Fatalf("vote %d: %s %s", i, resp.Status, body)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "votes/s")
		})
	}
}

// TestRateLimitedRunSaysSo: against a gateway that rate-limits it, the
// bench's calls wait out their 429s (the client tries again after
// Retry-After), and the report counts them and says the timings include
// those waits, rather than passing them off as the gateway's speed.
func TestRateLimitedRunSaysSo(t *testing.T) {
	limit, err := httpapi.NewRateLimit(40, 2)
	if err != nil {
		t.Fatal(err)
	}
	srv, _, owner, api := benchGateway(t, limit)
	var out, progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		URL: api.URL, Persona: "bench", Voters: []*signing.Key{owner.Key}, Redis: srv.Client(t),
		Concurrency: 2, N: 2, Unloaded: 2, Out: &out, Progress: &progress,
	})
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	if rep.RateLimited == 0 {
		t.Fatalf("no call was rate limited at 40 a second, burst 2; the test limits nothing:\n%s", out.String())
	}
	if want := fmt.Sprintf("rate limited: %d calls answered 429 and waited out", rep.RateLimited); !bytes.Contains(out.Bytes(), []byte(want)) {
		t.Errorf("the report does not say %q:\n%s", want, out.String())
	}
	if !bytes.Contains(progress.Bytes(), []byte("the gateway is rate limiting the bench")) {
		t.Errorf("no progress line told of the waits:\n%s", progress.String())
	}
}

// TestRunLeavesNoScratchKeys: a run measures the design's minimum vote
// unloaded and under load, on scratch keys of its own in the gateway's
// Redis, and deletes them all when it ends.
func TestRunLeavesNoScratchKeys(t *testing.T) {
	srv, _, owner, api := benchGateway(t, nil)
	rdb := srv.Client(t)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		URL: api.URL, Persona: "bench", Voters: []*signing.Key{owner.Key}, Redis: rdb,
		Concurrency: 2, N: 3, Unloaded: 2, Out: &out,
	})
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	if len(rep.Floor.Minimum) != 6 || rep.MinimumLoad == nil || rep.MinimumLoad.Votes != 3 {
		t.Fatalf("minimum: %d unloaded samples, under load %+v; want 6 and 3 votes\n%s", len(rep.Floor.Minimum), rep.MinimumLoad, out.String())
	}
	keys, err := rdb.Keys(ctx, "signoff-bench-minimum-*").Result()
	if err != nil || len(keys) != 0 {
		t.Errorf("scratch keys left after the run: %v (%v)", keys, err)
	}
}

// TestVotesPhaseDecidesEveryRequestItMade: the votes phase answers in its
// window what it reaches of the requests it made, and after the window
// the rest, so every one is decided, once, with its waiter's receipt —
// whether the window reached all of them (its pool ran out before the
// time) or none (its time was up before it began).
func TestVotesPhaseDecidesEveryRequestItMade(t *testing.T) {
	srv, env, owner, api := benchGateway(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		name     string
		duration time.Duration
		wantLeft bool
	}{
		{"the pool runs out first", time.Minute, false},
		{"the time is up first", time.Nanosecond, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var progress bytes.Buffer
			b := newRun(Config{
				URL: api.URL, Persona: "bench", Voters: []*signing.Key{owner.Key}, Redis: srv.Client(t),
				Concurrency: 2, Duration: c.duration, Progress: &progress,
			})
			// A loaded phase of 4 lifecycles a minute: the pool is twice
			// what it would answer in the duration, and one a client.
			rep := &Report{Loaded: Phase{Lifecycles: 4, Elapsed: time.Minute}}
			if err := b.votes(ctx, rep); err != nil {
				t.Fatal(err)
			}
			want := 2 + int(2*4*c.duration.Minutes())
			if rep.VotesPool != want {
				t.Fatalf("pool of %d requests, want %d", rep.VotesPool, want)
			}
			if got := rep.Votes.Lifecycles + rep.VotesLeft; got != want || (rep.VotesLeft > 0) != c.wantLeft {
				t.Errorf("%d answered in the window and %d after, of %d", rep.Votes.Lifecycles, rep.VotesLeft, want)
			}
			if rep.Votes.Votes != rep.Votes.Lifecycles || b.errs.Load() != 0 {
				t.Errorf("%d votes on %d requests, %d errors: %v", rep.Votes.Votes, rep.Votes.Lifecycles, b.errs.Load(), b.firstErrs)
			}
			if c.wantLeft && !strings.Contains(progress.String(), "the window did not reach, untimed") {
				t.Errorf("progress does not say the leftovers were answered after the window:\n%s", progress.String())
			}
			rep.Config = b.cfg
			var out bytes.Buffer
			rep.Print(&out)
			if ranOut := strings.Contains(out.String(), "they ran out before the duration"); ranOut == c.wantLeft {
				t.Errorf("the report says the requests ran out before the duration: %v, want %v:\n%s", ranOut, !c.wantLeft, out.String())
			}
			if len(b.ids) != want {
				t.Fatalf("kept %d request ids, want %d", len(b.ids), want)
			}
			for _, id := range b.ids {
				r, err := env.Store.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if r.Status != bot.Approved || len(r.Receipt) == 0 || len(r.Votes) != 1 {
					t.Errorf("request %s: %s, %d votes, receipt %d bytes; want approved once, sealed", id, r.Status, len(r.Votes), len(r.Receipt))
				}
			}
			if a := b.checkAudit(ctx, env.Store); !a.ok() || a.Decisions != want {
				t.Errorf("audit: %+v, want %d decisions, each once", a, want)
			}
		})
	}
}

// TestVotesPhaseCountsCreatesThatFail: a request the votes phase cannot
// make (here, for a persona the gateway does not know) is counted as a
// failure with the gateway's reason, and the phase times nothing.
func TestVotesPhaseCountsCreatesThatFail(t *testing.T) {
	srv, _, owner, api := benchGateway(t, nil)
	b := newRun(Config{URL: api.URL, Persona: "nobody", Voters: []*signing.Key{owner.Key}, Redis: srv.Client(t), Concurrency: 2, N: 3})
	rep := &Report{}
	if err := b.votes(context.Background(), rep); err != nil {
		t.Fatal(err)
	}
	if b.errs.Load() != 3 || rep.VotesPool != 0 || rep.Votes.Votes != 0 || rep.Votes.Elapsed != 0 {
		t.Fatalf("%d errors, pool %d, %d votes in %s; want the 3 creates failed and nothing timed", b.errs.Load(), rep.VotesPool, rep.Votes.Votes, rep.Votes.Elapsed)
	}
	if !strings.Contains(b.firstErrs[0], "votes phase: create request:") || !strings.Contains(b.firstErrs[0], "nobody") {
		t.Errorf("first error %q does not say the votes phase could not make its request, and why", b.firstErrs[0])
	}
}

// benchGateway is an in-process gateway on an embedded Redis, with a
// "bench" persona whose owner alone decides, behind the HTTP API (rate
// limited by limit, when given).
func benchGateway(t *testing.T, limit *httpapi.RateLimit) (*bottest.Server, *bottest.Env, bottest.Person, *httptest.Server) {
	t.Helper()
	srv := bottest.Start(t, "embedded")
	owner := bottest.NewPerson("owner")
	p := bot.Persona{Name: "bench", Owner: &bot.Person{Name: "owner", Identities: []bot.Identity{owner.Identity()}}, DenyQuorum: 1, Timeout: time.Hour}
	env := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
	api := httptest.NewServer((&httpapi.Server{Gateway: env.Gateway, Limit: limit}).Handler())
	t.Cleanup(api.Close)
	return srv, env, owner, api
}
