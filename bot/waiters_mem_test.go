package bot_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/httpapi"
)

// memSample is what one replica holds, read with runtime/metrics after a
// GC (which also shrinks goroutine stacks to what they use).
type memSample struct{ heap, stacks, goroutines uint64 }

func sampleMem() memSample {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/sched/goroutines:goroutines"},
	}
	metrics.Read(s)
	return memSample{s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()}
}

// perWaiter reports (after-before)/n for each class and their total.
func perWaiter(b *testing.B, before, after memSample, n int) {
	d := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	heap, stacks := d(after.heap, before.heap), d(after.stacks, before.stacks)
	b.ReportMetric(heap, "heap-B/waiter")
	b.ReportMetric(stacks, "stack-B/waiter")
	b.ReportMetric(heap+stacks, "B/waiter")
	b.ReportMetric(d(after.goroutines, before.goroutines), "goroutines/waiter")
	b.Logf("%d waiters: heap %+.0f B, stacks %+.0f B, goroutines %+.2f each; total %.0f B/waiter",
		n, heap, stacks, d(after.goroutines, before.goroutines), heap+stacks)
}

const tenK = 10_000

// waiterEnv is a gateway on the real Redis with n pending requests.
func waiterEnv(b *testing.B, n int) (*bottest.Env, []*bot.Request, bot.Identity) {
	if os.Getenv("SIGNOFF_TEST_REDIS_URL") == "" {
		b.Skip("needs a real Redis (an embedded one would count in this process's memory): set SIGNOFF_TEST_REDIS_URL=redis://127.0.0.1:6379/0")
	}
	alice := bot.Identity{Platform: bot.Slack, ID: "U0ALICE"}
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice}}, DenyQuorum: 1, Timeout: time.Hour}
	env := bottest.New(b, p, nil)
	reqs := make([]*bot.Request, n)
	parallel(n, func(i int) {
		reqs[i] = env.Submit(b, bot.NewRequest{Persona: "demo", Action: fmt.Sprint("deploy ", i)})
		// Read once, so what the store caches per request (its persona
		// snapshot) is there before the waiters are counted.
		if _, err := env.Gateway.Get(context.Background(), reqs[i].ID); err != nil {
			b.Error(err)
		}
	})
	return env, reqs, alice
}

// parallel runs f(0..n-1) on 8 goroutines.
func parallel(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// oneSubscription checks the replica holds one subscription to the
// decision channel, however many wait.
func oneSubscription(b *testing.B, env *bottest.Env) {
	ch := env.Store.DecisionChannel()
	subs, err := env.Redis.PubSubNumSub(context.Background(), ch).Result()
	if err != nil {
		b.Fatal(err)
	}
	if n := subs[ch]; n != 1 {
		b.Fatalf("%d Redis subscriptions to %s for %d waiters, want 1", n, ch, env.Gateway.Waiting())
	}
}

func decideAll(b *testing.B, env *bottest.Env, reqs []*bot.Request, alice bot.Identity) {
	parallel(len(reqs), func(i int) {
		r := reqs[i]
		out, err := env.Gateway.CastVote(context.Background(), bot.Ballot{RequestID: r.ID, Voter: alice, Choice: bot.Approve, Proof: bot.ProofPlatform, DedupKey: "vote:" + r.ID})
		if err != nil || !out.Decided {
			b.Errorf("vote on %s = %+v, %v; want it to decide", r.ID, out, err)
		}
	})
}

func awaitWaiting(b *testing.B, env *bottest.Env, n int) {
	deadline := time.Now().Add(2 * time.Minute)
	for env.Gateway.Waiting() < n {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d waiters registered after 2m", env.Gateway.Waiting(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkWaiters10k holds 10,000 waiting requests (one waiter each) on
// one gateway with the real Redis and reports, from runtime/metrics, the
// heap and goroutine-stack bytes each waiter adds; it checks one Redis
// subscription serves them all and every one is answered when decided.
//
//   - wait-api: a goroutine per waiter in Gateway.Wait, as the HTTP
//     handler calls it — the gateway's own cost of a waiter.
//   - wait-func: Gateway.WaitFunc, a parked waiter with no goroutine.
//   - http: 10,000 GET /v1/requests/{id}?wait=60s long-polls on loopback
//     to the real handler, from another process (so only the server side
//     is counted): what a waiter costs a replica, net/http's connection
//     goroutines and buffers included.
func BenchmarkWaiters10k(b *testing.B) {
	b.Run("wait-api", func(b *testing.B) {
		for b.Loop() {
			env, reqs, alice := waiterEnv(b, tenK)
			before := sampleMem()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			var answered atomic.Int64
			var wg sync.WaitGroup
			for _, r := range reqs {
				wg.Go(func() {
					for ctx.Err() == nil { // a wait may return pending when the subscription is re-established
						got, err := env.Gateway.Wait(ctx, r.ID, time.Minute)
						if err != nil {
							b.Error(err)
							return
						}
						if got.Status == bot.Approved {
							answered.Add(1)
							return
						}
					}
				})
			}
			awaitWaiting(b, env, tenK)
			after := sampleMem()
			oneSubscription(b, env)
			perWaiter(b, before, after, tenK)
			decideAll(b, env, reqs, alice)
			wg.Wait()
			cancel()
			if n := answered.Load(); n != tenK {
				b.Fatalf("%d waiters answered approved, want %d", n, tenK)
			}
		}
	})
	b.Run("wait-func", func(b *testing.B) {
		for b.Loop() {
			env, reqs, alice := waiterEnv(b, tenK)
			before := sampleMem()
			var answered, other atomic.Int64
			var wg sync.WaitGroup
			wg.Add(tenK)
			done := func(got *bot.Request, err error) {
				defer wg.Done()
				if err == nil && got.Status == bot.Approved {
					answered.Add(1)
				} else {
					other.Add(1)
				}
			}
			for _, r := range reqs {
				got, w, err := env.Gateway.WaitFunc(context.Background(), r.ID, time.Minute, -1, done)
				if err != nil || w == nil {
					b.Fatalf("WaitFunc(%s) answered at once: %v, %v", r.ID, got, err)
				}
			}
			awaitWaiting(b, env, tenK)
			after := sampleMem()
			oneSubscription(b, env)
			perWaiter(b, before, after, tenK)
			decideAll(b, env, reqs, alice)
			wg.Wait()
			if n := answered.Load(); n != tenK {
				b.Fatalf("%d waiters answered approved (%d otherwise), want %d", n, other.Load(), tenK)
			}
		}
	})
	b.Run("http", func(b *testing.B) {
		for b.Loop() {
			env, reqs, alice := waiterEnv(b, tenK)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := &http.Server{Handler: (&httpapi.Server{Gateway: env.Gateway, Logger: slog.New(slog.DiscardHandler)}).Handler()}
			go srv.Serve(ln)
			before := sampleMem()
			cmd := exec.Command(os.Args[0], "-test.run=^TestWaiterClientProcess$")
			cmd.Env = append(os.Environ(), "SIGNOFF_WAITER_CLIENT="+ln.Addr().String())
			var ids strings.Builder
			for _, r := range reqs {
				ids.WriteString(r.ID + "\n")
			}
			cmd.Stdin = strings.NewReader(ids.String())
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			awaitWaiting(b, env, tenK)
			// Registered waiters' handlers are still hijacking and
			// returning: measure once they have (or a minute passed).
			settle := time.Now().Add(time.Minute)
			for runtime.NumGoroutine()-int(before.goroutines) > tenK/100 && time.Now().Before(settle) {
				time.Sleep(50 * time.Millisecond)
			}
			after := sampleMem()
			oneSubscription(b, env)
			perWaiter(b, before, after, tenK)
			decideAll(b, env, reqs, alice)
			if err := cmd.Wait(); err != nil {
				b.Fatalf("waiter clients: %v\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), fmt.Sprintf("answered approved: %d\n", tenK)) {
				b.Fatalf("waiter clients did not all get approved:\n%s", out.String())
			}
			srv.Close()
		}
	})
}

// TestWaiterClientProcess is BenchmarkWaiters10k's other process: one
// loopback connection per request id on stdin, each a long-poll whose
// answer must say approved.
func TestWaiterClientProcess(t *testing.T) {
	addr := os.Getenv("SIGNOFF_WAITER_CLIENT")
	if addr == "" {
		t.Skip("run by BenchmarkWaiters10k")
	}
	var ids []string
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		ids = append(ids, sc.Text())
	}
	var approved, failed atomic.Int64
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				failed.Add(1)
				fmt.Println("dial:", err)
				return
			}
			defer c.Close()
			fmt.Fprintf(c, "GET /v1/requests/%s?wait=60s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", id, addr)
			body, err := io.ReadAll(c)
			if err == nil && strings.Contains(string(body), `"status":"approved"`) {
				approved.Add(1)
				return
			}
			failed.Add(1)
			if failed.Load() < 5 {
				fmt.Printf("%s: %v %.300s\n", id, err, body)
			}
		})
	}
	wg.Wait()
	fmt.Printf("answered approved: %d\nfailed: %d\n", approved.Load(), failed.Load())
}
