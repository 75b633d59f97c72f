package faults

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// everywhere posts the same signed event to every replica at the same
// moment and returns each replica's answer.
func everywhere(t *testing.T, rs []*replica, ev []byte) []bot.Result {
	t.Helper()
	out := make([]bot.Result, len(rs))
	errs := make([]error, len(rs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := r.api.PostEvent(ctxT(t, 10*time.Second), ev)
			out[i], errs[i] = res.Result, err
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", rs[i].name, err)
		}
	}
	return out
}

// sameReactionEverywhere files n requests and delivers bob's and carol's
// ✅ on each to every replica at once: each reaction counts once, each
// request is approved once.
func sameReactionEverywhere(t *testing.T, f *fleet, n int) []*bot.Request {
	t.Helper()
	var reqs []*bot.Request
	for i := range n {
		req := f.submit(t, f.replicas[i%len(f.replicas)], fmt.Sprintf("rm -rf /srv/build-%d", i))
		reqs = append(reqs, req)
		for _, k := range []*signing.Key{f.people.bob, f.people.carol} {
			results := everywhere(t, f.replicas, reaction(t, k, req, bot.Approve))
			counted := 0
			for _, r := range results {
				switch r {
				case bot.Counted:
					counted++
				case bot.Duplicate:
				default:
					t.Errorf("request %d: a replica answered %q, want counted or duplicate", i, r)
				}
			}
			if counted != 1 {
				t.Fatalf("request %d: one reaction delivered to %d replicas was counted %d times (%v), want once", i, len(f.replicas), counted, results)
			}
		}
	}
	for _, req := range reqs {
		got, err := f.replicas[0].api.Get(ctxT(t, 10*time.Second), req.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != bot.Approved || strings.Join(got.DecidedBy, ",") != "bob,carol" {
			t.Fatalf("request %s = %s by %v, want approved by bob, carol", req.ID, got.Status, got.DecidedBy)
		}
	}
	return reqs
}

func TestSameReactionDeliveredToEveryReplicaAtOnce(t *testing.T) {
	rd := startRedis(t, false)
	f := newFleet(t, rd.url())
	f.start()
	f.start()
	f.start()
	reqs := sameReactionEverywhere(t, f, 20)
	f.checkAudit(t, reqs)
}

// forged makes n events that must not count: bob's genuine reaction with
// its signature or content altered after signing, reactions signed by
// keys nobody listed (strangers: 1200 distinct ones, more than the 1000
// answers a request stores, then repeats), bob's reaction to an event the
// gateway never posted, and bytes that are not JSON.
func forged(t *testing.T, req *bot.Request, bob *signing.Key, n int) [][]byte {
	t.Helper()
	genuine := reaction(t, bob, req, bot.Approve)
	var ev map[string]any
	if err := json.Unmarshal(genuine, &ev); err != nil {
		t.Fatal(err)
	}
	sign := func(k *signing.Key, target string, at time.Time) []byte {
		e, err := signing.NewReaction(k, target, req.GatewayKey, bot.Approve, at)
		if err != nil {
			panic(err)
		}
		return e
	}
	strangers := make([][]byte, 1200)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := signing.NewKey()
			for j := w; j < len(strangers); j += 4 {
				if j%100 == w {
					k = signing.NewKey()
				}
				strangers[j] = sign(k, req.EventID, time.Now().Add(-time.Duration(j%240)*time.Second))
			}
		}()
	}
	wg.Wait()
	unknown := make([][]byte, 20)
	for j := range unknown {
		unknown[j] = sign(bob, strings.Repeat("ab", 32), time.Now().Add(-time.Duration(j)*time.Second))
	}
	out := make([][]byte, 0, n)
	for i := 0; len(out) < n; i++ {
		switch i % 5 {
		case 0: // bob's signature, one hex digit changed
			sig := []byte(ev["sig"].(string))
			sig[i%len(sig)] = "0123456789abcdef"[(strings.IndexByte("0123456789abcdef", sig[i%len(sig)])+1)%16]
			out = append(out, reencode(ev, "sig", string(sig)))
		case 1: // bob's event with a ❌ swapped in: id and signature no longer match
			out = append(out, reencode(ev, "content", "❌"))
		case 2: // a stranger's well-signed ✅
			out = append(out, strangers[(i/5)%len(strangers)])
		case 3: // bob's key, but for an event the gateway never posted
			out = append(out, unknown[(i/5)%len(unknown)])
		case 4:
			out = append(out, []byte(fmt.Sprintf(`{"kind":7,"content":"✅","id":"%d"`, i)))
		}
	}
	return out
}

func reencode(ev map[string]any, field string, v any) []byte {
	c := make(map[string]any, len(ev))
	for k, x := range ev {
		c[k] = x
	}
	c[field] = v
	b, _ := json.Marshal(c)
	return b
}

func TestBurstOfForgedEvents(t *testing.T) {
	const n = 10_000
	rd := startRedis(t, false)
	f := newFleet(t, rd.url())
	// 10000 events from one address as fast as 16 workers go: this measures
	// the vote path under a burst, which the per-client rate limit (50/s
	// from one address by default; tested in bot/httpapi) would answer
	// with 429s before any signature is checked.
	f.extraEnv = []string{"SIGNOFF_RATE_LIMIT=0"}
	a, b := f.start(), f.start()
	req := f.submit(t, a, "git push --force origin main")
	events := forged(t, req, f.people.bob, n)

	var counted, accepted, refused, failed atomic.Int64
	work := make(chan []byte)
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	started := time.Now()
	for w := range 16 {
		r := f.replicas[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range work {
				res, err := hc.Post("http://"+r.addr+"/v1/nostr/events", "application/json", strings.NewReader(string(ev)))
				if err != nil {
					failed.Add(1)
					continue
				}
				var out struct {
					Result bot.Result `json:"result"`
				}
				json.NewDecoder(res.Body).Decode(&out)
				res.Body.Close()
				switch {
				case res.StatusCode == http.StatusOK && out.Result == bot.Counted:
					counted.Add(1)
				case res.StatusCode == http.StatusOK:
					accepted.Add(1)
				case res.StatusCode >= 400 && res.StatusCode < 500:
					refused.Add(1)
				default:
					failed.Add(1)
				}
			}
		}()
	}
	for _, ev := range events {
		work <- ev
	}
	close(work)
	wg.Wait()
	took := time.Since(started)
	t.Logf("%d forged events through 2 replicas in %s (%.0f/s): %d refused, %d recorded as ignored, %d counted, %d failed",
		n, took.Round(time.Millisecond), float64(n)/took.Seconds(), refused.Load(), accepted.Load(), counted.Load(), failed.Load())
	if counted.Load() != 0 || failed.Load() != 0 {
		t.Fatalf("forged events: %d counted, %d failed (5xx or transport), want 0 and 0", counted.Load(), failed.Load())
	}
	if want := int64(n * 4 / 5); refused.Load() != want {
		t.Errorf("refused %d forged events, want %d (bad signatures, unknown event, not JSON)", refused.Load(), want)
	}
	got, err := b.api.Get(ctxT(t, 10*time.Second), req.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != bot.Pending {
		t.Fatalf("after the burst the request is %s by %v, want still pending", got.Status, got.DecidedBy)
	}
	if len(got.Votes) > 1000 {
		t.Errorf("the burst stored %d answers on the request, want at most 1000 (qredis.MaxAnswers)", len(got.Votes))
	}
	// The burst changed nothing that matters: the owner still decides.
	if out := b.vote(t, reaction(t, f.people.alice, req, bot.Approve)); out.Result != bot.Counted || out.Status != bot.Approved {
		t.Fatalf("alice's vote after the burst = %+v, want counted, approved", out)
	}
	f.checkAudit(t, []*bot.Request{req})
}
