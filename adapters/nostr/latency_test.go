package nostr_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/signoff/signoff/adapters/nostr/relaytest"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// TestLatencyRun measures, over many requests, the time from a reaction
// reaching a relay to the waiting requester being answered (the gateway's
// Wait returning the decided request). It runs only with
// SIGNOFF_LATENCY_RUN=1 (SIGNOFF_LATENCY_N requests, default 1000), logs
// the median, p90, p99 and max, and asserts every decision, not the times.
func TestLatencyRun(t *testing.T) {
	if os.Getenv("SIGNOFF_LATENCY_RUN") != "1" {
		t.Skip("set SIGNOFF_LATENCY_RUN=1 to run")
	}
	n := 1000
	if s := os.Getenv("SIGNOFF_LATENCY_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("SIGNOFF_LATENCY_N=%q", s)
		}
		n = v
	}
	ra, rb := relaytest.Start(t), relaytest.Start(t)
	alice := bottest.NewPerson("alice")
	h := start(t, persona(alice, nil, 0, noteChannel(urls(ra, rb)...)), urls(ra, rb))

	ctx := context.Background()
	client, closeClient, err := relaytest.Connect(ctx, ra.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient()

	lat := make([]time.Duration, 0, n)
	var inSubmit, inListen time.Duration
	began := time.Now()
	for i := range n {
		t0 := time.Now()
		r := h.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy build " + strconv.Itoa(i), Reason: "latency run"})
		if r.Status != bot.Pending {
			t.Fatalf("request %d is %s (%s)", i, r.Status, r.DecisionReason)
		}
		t1 := time.Now()
		inSubmit += t1.Sub(t0)
		ev := reaction(alice, r.EventID, r.GatewayKey, "✅", time.Now())
		// A person reacts after seeing the request: once the adapter
		// listens for it on the relay.
		eventually(t, "the adapter to listen for request "+r.ID, func() bool { return ra.Listeners(&ev) > 0 })
		inListen += time.Since(t1)

		type answer struct {
			r  *bot.Request
			at time.Time
		}
		answered := make(chan answer, 1)
		waiting := make(chan struct{})
		go func() {
			close(waiting)
			got, err := h.env.Gateway.Wait(ctx, r.ID, 30*time.Second)
			if err != nil {
				t.Errorf("wait %s: %v", r.ID, err)
			}
			answered <- answer{got, time.Now()}
		}()
		<-waiting
		eventually(t, "the requester to wait", func() bool { return h.env.Gateway.Waiting() > 0 })
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := client.Publish(pctx, ev)
		cancel()
		if err != nil {
			t.Fatalf("publish reaction %d: %v", i, err)
		}
		a := <-answered
		if a.r == nil || a.r.Status != bot.Approved || len(a.r.Votes) != 1 || a.r.Votes[0].Result != bot.Counted {
			t.Fatalf("request %d answered as %+v, want approved by one counted vote", i, a.r)
		}
		reached, ok := ra.ReceivedAt(ev.ID)
		if !ok {
			t.Fatalf("the relay never saw reaction %d", i)
		}
		lat = append(lat, a.at.Sub(reached))
	}
	elapsed := time.Since(began)
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	t.Logf("reaction at relay → requester answered, N=%d: median %v, p90 %v, p99 %v, max %v, min %v (run %v, %.0f requests/s end to end)",
		len(lat), q(0.5), q(0.9), q(0.99), lat[len(lat)-1], lat[0], elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds())
	t.Logf("mean time in Submit %v, until the adapter listened %v", inSubmit/time.Duration(n), inListen/time.Duration(n))
}
