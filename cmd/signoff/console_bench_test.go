package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// benchPersona keeps requests pending for the whole benchmark.
const benchPersona = `name: demo
owner:
  name: alice
  nostr: OWNER
timeout: 1h
`

// Floors the console is held to (the issue's): the first paint of a list
// of 1,000 pending requests, and a vote's decision reaching the page.
const (
	firstPaintFloorMs = 1000
	liveUpdateFloorMs = 100
)

// BenchmarkConsoleFirstPaint1000 opens the console on a gateway with
// 1,000 pending requests and reports how long after navigation the list
// was first painted (ms/paint, the page's own performance clock) and
// when all 1,000 cards were built, beside the floor.
func BenchmarkConsoleFirstPaint1000(b *testing.B) { benchFirstPaint(b, 1000) }

// BenchmarkConsoleFirstPaintEmpty is the same with nothing pending: the
// machine's own time to load the page, for comparison.
func BenchmarkConsoleFirstPaintEmpty(b *testing.B) { benchFirstPaint(b, 0) }

func benchFirstPaint(b *testing.B, pending int) {
	b.Setenv("SIGNOFF_RATE_LIMIT", "0")
	keyFile := gateway(b, benchPersona)
	c := apiClient()
	var wg sync.WaitGroup
	errs := make(chan error, pending)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < pending; i += 8 {
				_, err := c.Submit(context.Background(), bot.NewRequest{Persona: "demo", Action: fmt.Sprintf("rm -rf /srv/build/%d", i), Reason: "free the disk before the release build"})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	link := consoleLink(b)
	ctx := browser(b, 1280, 900, ownerSecret(b, keyFile))
	var total, worst, complete float64
	b.ResetTimer()
	for b.Loop() {
		// about:blank between: each open is a new document, not a jump
		// within the same page to the link's fragment.
		inBrowser(b, ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(link), chromedp.WaitReady(css(`body[data-complete][data-painted]`)))
		n := read(b, ctx, chromedp.Evaluate[string](`document.body.dataset.loaded`))
		if n != strconv.Itoa(pending) {
			b.Fatalf("the page listed %s pending requests, want %d", n, pending)
		}
		ms, _ := strconv.ParseFloat(read(b, ctx, chromedp.Evaluate[string](`document.body.dataset.painted`)), 64)
		all, _ := strconv.ParseFloat(read(b, ctx, chromedp.Evaluate[string](`document.body.dataset.complete`)), 64)
		total += ms
		complete += all
		worst = max(worst, ms)
	}
	b.ReportMetric(total/float64(b.N), "ms/paint")
	b.ReportMetric(worst, "ms/worst-paint")
	b.ReportMetric(complete/float64(b.N), "ms/all-built")
	b.ReportMetric(firstPaintFloorMs, "ms/paint-floor")
}

// BenchmarkConsoleLiveUpdate signs a vote that decides a pending request,
// posts it, and reports how long after the post began the page heard the
// decision through its feed (ms/update: the page's clock at the update
// minus the time of the post, one machine), beside the floor.
func BenchmarkConsoleLiveUpdate(b *testing.B) {
	keyFile := gateway(b, benchPersona)
	owner, _, err := signing.LoadOrCreateKey(keyFile)
	if err != nil {
		b.Fatal(err)
	}
	link := consoleLink(b)
	ctx := browser(b, 1280, 900, "")
	inBrowser(b, ctx, chromedp.Navigate(link), chromedp.WaitReady(css(`body[data-painted]`)))
	c := apiClient()
	var lat []float64
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		r, err := c.Submit(context.Background(), bot.NewRequest{Persona: "demo", Action: "git push --force origin main", Reason: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		inBrowser(b, ctx, chromedp.WaitReady(css(pendingCard(r.ID))))
		ev, err := signing.NewReaction(owner, r.EventID, r.GatewayKey, bot.Approve, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if out, err := c.PostEvent(context.Background(), ev); err != nil || out.Status != bot.Approved {
			b.Fatalf("vote = %+v, %v", out, err)
		}
		inBrowser(b, ctx, chromedp.WaitReady(css(`body[data-heard^="`+r.ID+`:approved"]`)))
		b.StopTimer()
		at, _ := strconv.ParseInt(read(b, ctx, chromedp.Evaluate[string](`document.body.dataset.heardAt`)), 10, 64)
		lat = append(lat, float64(at-start.UnixMilli()))
		b.StartTimer()
	}
	sort.Float64s(lat)
	var sum float64
	for _, l := range lat {
		sum += l
	}
	b.ReportMetric(sum/float64(len(lat)), "ms/update")
	b.ReportMetric(lat[len(lat)*99/100], "ms/p99-update")
	b.ReportMetric(liveUpdateFloorMs, "ms/update-floor")
}
