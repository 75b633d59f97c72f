package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/tokens"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

// testClock is a clock the test moves: the server's, while the client
// waits real time.
type testClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
}

const refusedLine = "calls refused: rate limited"

// limitedTotal is signoff_rate_limited_total{limit} in reg.
func limitedTotal(t *testing.T, reg *prometheus.Registry, limit string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "signoff_rate_limited_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "limit" && l.GetValue() == limit {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no signoff_rate_limited_total{limit=%q}", limit)
	return 0
}

// limitedSetup is authSetup with the server's clock stopped (moved only
// by the test), the per-client limit given, and its log kept.
func limitedSetup(t *testing.T, perSecond float64, burst int) (*authFixture, *httptest.Server, *testClock, *bottest.Buffer) {
	t.Helper()
	f := authSetup(t)
	clock := &testClock{at: time.Now()}
	f.api.Now = clock.Now
	logs := &bottest.Buffer{}
	f.api.Logger = slog.New(slog.NewTextHandler(logs, nil))
	f.api.Limit, _ = httpapi.NewRateLimit(perSecond, burst)
	srv := httptest.NewServer(f.api.Handler())
	t.Cleanup(srv.Close)
	return f, srv, clock, logs
}

type retryNote struct {
	wait time.Duration
	msg  string
}

// TestRateLimitedClientWaitsAndSucceeds: with 1 call a second, burst 1,
// the agent's second call is answered 429; its client waits the
// Retry-After it was given, tells OnRetry, and the call then succeeds. The
// 429 is counted and logged once, naming the token, route and wait.
func TestRateLimitedClientWaitsAndSucceeds(t *testing.T) {
	f, srv, clock, logs := limitedSetup(t, 1, 1)
	tok := f.mint(t, tokens.Spec{Name: "agent", Scopes: []tokens.Scope{tokens.ReadRequests}})
	c := httpapi.NewClient(srv.URL)
	c.Token = tok
	var notes []retryNote
	c.OnRetry = func(wait time.Duration, msg string) {
		notes = append(notes, retryNote{wait, msg})
		clock.Add(wait) // the server's clock runs as the client waits
	}
	ctx := context.Background()
	if _, err := c.List(ctx, bot.Filter{}); err != nil {
		t.Fatalf("first call: %v", err)
	}
	if _, err := c.List(ctx, bot.Filter{}); err != nil {
		t.Fatalf("second call, after its wait: %v", err)
	}
	if len(notes) != 1 || notes[0].wait != time.Second || !strings.Contains(notes[0].msg, `too many calls from token "agent"`) {
		t.Errorf("OnRetry told %+v, want one wait of 1s with the gateway's message", notes)
	}
	if n := limitedTotal(t, f.metrics, bot.LimitClient); n != 1 {
		t.Errorf("signoff_rate_limited_total{limit=client} = %v, want 1", n)
	}
	lines := logs.Lines(refusedLine)
	if len(lines) != 1 {
		t.Fatalf("log lines for the 429: %q, want 1", lines)
	}
	for _, want := range []string{"level=WARN", "limit=client", `client="token \"agent\""`, "path=/v1/requests", "retry_after=1s", "refused=1"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %q lacks %s", lines[0], want)
		}
	}
}

// TestFloodOfRefusedCallsLogsOneLine: an agent loops on the API past its
// limit from several goroutines: 50 calls refused, each counted, one log
// line. Ten seconds on, the next refusal's line tells the 49 not yet told.
func TestFloodOfRefusedCallsLogsOneLine(t *testing.T) {
	f, srv, clock, logs := limitedSetup(t, 0.01, 1) // one call in 100s: the clock's 10s refill nothing
	tok := f.mint(t, tokens.Spec{Name: "looper", Scopes: []tokens.Scope{tokens.ReadRequests}})
	if status, _, raw := call(t, srv.URL, "GET", "/v1/requests", tok, ""); status != 200 {
		t.Fatalf("first call: %d %s", status, raw)
	}
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				req, _ := http.NewRequest("GET", srv.URL+"/v1/requests", nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 429 {
					t.Errorf("a call past the limit: %d, want 429", resp.StatusCode)
				}
			}
		}()
	}
	wg.Wait()
	if n := limitedTotal(t, f.metrics, bot.LimitClient); n != 50 {
		t.Errorf("signoff_rate_limited_total{limit=client} = %v, want 50", n)
	}
	if lines := logs.Lines(refusedLine); len(lines) != 1 || !strings.Contains(lines[0], "refused=1") {
		t.Errorf("log lines for 50 refused calls: %q, want one (refused=1)", lines)
	}
	clock.Add(10 * time.Second)
	if status, _, _ := call(t, srv.URL, "GET", "/v1/requests", tok, ""); status != 429 {
		t.Fatalf("10s later: %d, want 429", status)
	}
	lines := logs.Lines(refusedLine)
	if len(lines) != 2 || !strings.Contains(lines[1], "refused=50") {
		t.Errorf("log lines 10s on: %q, want a second one with refused=50 (49 untold and this one)", lines)
	}
}

// TestBadTokenFloodIsCountedAndLoggedOnce: someone tries tokens from one
// address; past the bad-token burst the 429s are counted (bad_token) and
// logged once, naming the address.
func TestBadTokenFloodIsCountedAndLoggedOnce(t *testing.T) {
	f, srv, _, logs := limitedSetup(t, httpapi.DefaultRate, httpapi.DefaultBurst)
	f.mint(t, tokens.Spec{Name: "someone", Scopes: []tokens.Scope{tokens.ReadRequests}})
	codes := map[int]int{}
	for range 30 {
		status, _, _ := call(t, srv.URL, "GET", "/v1/requests", "sgn_AAAAAAAAAAAAAAAA_"+strings.Repeat("x", 43), "")
		codes[status]++
	}
	if codes[401] != 10 || codes[429] != 20 {
		t.Fatalf("answers %v, want 10 × 401 then 429s", codes)
	}
	if n := limitedTotal(t, f.metrics, bot.LimitBadToken); n != 20 {
		t.Errorf("signoff_rate_limited_total{limit=bad_token} = %v, want 20", n)
	}
	lines := logs.Lines(refusedLine)
	if len(lines) != 1 || !strings.Contains(lines[0], "limit=bad_token") || !strings.Contains(lines[0], `client="address 127.0.0.1"`) {
		t.Errorf("log lines: %q, want one for bad_token naming the address", lines)
	}
}

// TestRateLimitPastTheCallsDeadlineFailsAtOnce: the gateway asks for a
// wait longer than the caller's context allows: the call fails at once,
// before its deadline, with an error that names the rate limit.
func TestRateLimitPastTheCallsDeadlineFailsAtOnce(t *testing.T) {
	f, srv, _, _ := limitedSetup(t, 0.04, 1) // Retry-After 25s
	tok := f.mint(t, tokens.Spec{Name: "hurried", Scopes: []tokens.Scope{tokens.ReadRequests}})
	c := httpapi.NewClient(srv.URL)
	c.Token = tok
	c.OnRetry = func(wait time.Duration, msg string) { t.Errorf("waited %s past the deadline", wait) }
	if _, err := c.List(context.Background(), bot.Filter{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.List(ctx, bot.Filter{})
	if ctx.Err() != nil {
		t.Fatalf("the call returned after its deadline: %v", err)
	}
	if bot.ErrorCode(err) != bot.ERateLimited || !strings.Contains(err.Error(), "the gateway is rate limiting this client") ||
		!strings.Contains(err.Error(), "asks to wait 25s, longer than this call may still take") || !strings.Contains(err.Error(), "SIGNOFF_RATE_LIMIT") {
		t.Errorf("error %v, want a rate_limited one naming the limit and the wait", err)
	}
}

// rewriteRetryAfter sets the Retry-After of the real server's 429s to
// v() ("" removes it): what a proxy in front of the gateway might send.
func rewriteRetryAfter(h http.Handler, v func() string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&retryAfterWriter{ResponseWriter: w, v: v()}, r)
	})
}

type retryAfterWriter struct {
	http.ResponseWriter
	v string
}

func (w *retryAfterWriter) WriteHeader(code int) {
	if code == http.StatusTooManyRequests {
		w.Header().Del("Retry-After")
		if w.v != "" {
			w.Header().Set("Retry-After", w.v)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// TestGarbledRetryAfterWaitsAShortWhile: a 429 whose Retry-After is
// absent or not a number of seconds is tried again after a second.
func TestGarbledRetryAfterWaitsAShortWhile(t *testing.T) {
	f, _, clock, _ := limitedSetup(t, 1, 1)
	var mu sync.Mutex
	header := ""
	srv := httptest.NewServer(rewriteRetryAfter(f.api.Handler(), func() string { mu.Lock(); defer mu.Unlock(); return header }))
	defer srv.Close()
	for i, v := range []string{"", "soon", "-3", "1.5"} {
		t.Run(fmt.Sprintf("%q", v), func(t *testing.T) {
			mu.Lock()
			header = v
			mu.Unlock()
			c := httpapi.NewClient(srv.URL)
			c.Token = f.mint(t, tokens.Spec{Name: fmt.Sprint("agent", i), Scopes: []tokens.Scope{tokens.ReadRequests}})
			var waits []time.Duration
			c.OnRetry = func(wait time.Duration, msg string) { waits = append(waits, wait); clock.Add(wait) }
			for i := range 2 {
				if _, err := c.List(context.Background(), bot.Filter{}); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			if len(waits) != 1 || waits[0] != time.Second {
				t.Errorf("waits %v, want one of 1s", waits)
			}
		})
	}
}

// TestRetriesRunOut: a gateway that refuses every try (Retry-After 0, its
// clock stopped) is tried 6 times in all, then the call fails saying so.
func TestRetriesRunOut(t *testing.T) {
	f, _, _, _ := limitedSetup(t, 1, 1)
	srv := httptest.NewServer(rewriteRetryAfter(f.api.Handler(), func() string { return "0" }))
	defer srv.Close()
	c := httpapi.NewClient(srv.URL)
	c.Token = f.mint(t, tokens.Spec{Name: "agent", Scopes: []tokens.Scope{tokens.ReadRequests}})
	retries := 0
	c.OnRetry = func(time.Duration, string) { retries++ }
	if _, err := c.List(context.Background(), bot.Filter{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.List(context.Background(), bot.Filter{})
	if bot.ErrorCode(err) != bot.ERateLimited || !strings.Contains(err.Error(), "gave up after 6 tries") || !strings.Contains(err.Error(), "too many calls") {
		t.Errorf("error %v, want rate_limited: gave up after 6 tries, with the gateway's message", err)
	}
	if retries != httpapi.RetryTries {
		t.Errorf("%d retries, want %d", retries, httpapi.RetryTries)
	}
	if n := limitedTotal(t, f.metrics, bot.LimitClient); n != httpapi.RetryTries+1 {
		t.Errorf("counted %v, want %d", n, httpapi.RetryTries+1)
	}
}

// countingChannel is a platform that counts the messages published on it.
type countingChannel struct {
	mu    sync.Mutex
	texts []string
}

func (c *countingChannel) Post(context.Context, *bot.Request, bot.Persona, bot.ChannelConfig) ([]bot.MessageRef, error) {
	return nil, errors.New("countingChannel posts no requests")
}

func (c *countingChannel) Update(context.Context, *bot.Request, []bot.MessageRef) error { return nil }

func (c *countingChannel) Publish(_ context.Context, _ string, cc bot.ChannelConfig, text string) (bot.MessageRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.texts = append(c.texts, text)
	return bot.MessageRef{Platform: cc.Platform, Channel: cc.Target, ID: fmt.Sprint(len(c.texts))}, nil
}

func (c *countingChannel) published(text string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.texts {
		if strings.HasSuffix(t, ": "+text) {
			n++
		}
	}
	return n
}

// aheadClock is real time moved on by the test: the limits refill as the
// client waits, from a point the test chose.
type aheadClock struct {
	mu    sync.Mutex
	ahead time.Duration
}

func (c *aheadClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.ahead)
}

func (c *aheadClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ahead += d
}

// TestRateLimitedPublishIsPostedOnceWhenTriedAgain: past its persona's
// publish burst, an agent's publish is refused inside the handler — 429
// with Retry-After, nothing posted, nothing audited — and its client's
// retry posts it exactly once.
func TestRateLimitedPublishIsPostedOnceWhenTriedAgain(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := bottest.Redis(t)
	store := qredis.New(rdb, prefix)
	alice := bottest.NewPerson("alice")
	if err := store.PutPersona(ctx, bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}},
		Timeout: time.Minute, Channels: []bot.ChannelConfig{{Platform: bot.Slack, Target: "C1"}}}); err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	key := signing.NewKey()
	audit, err := signing.OpenAuditWith(ctx, auditPath, key, signing.AuditOptions{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer audit.Close()
	slack := &countingChannel{}
	clock := &aheadClock{}
	g := &bot.Gateway{Store: store, Signer: key, Audit: audit, Channels: map[bot.Platform]bot.Channel{bot.Slack: slack},
		Logger: slog.New(slog.DiscardHandler), Now: clock.Now}
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	reg := prometheus.NewRegistry()
	logs := &bottest.Buffer{}
	api := &httpapi.Server{Gateway: g, Logger: slog.New(slog.NewTextHandler(logs, nil)), OnRateLimited: bot.NewMetrics(reg).RateLimited}
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	c := httpapi.NewClient(srv.URL)
	var waits []time.Duration
	c.OnRetry = func(wait time.Duration, msg string) {
		waits = append(waits, wait)
		if !strings.Contains(msg, "persona demo published 10 messages lately") {
			t.Errorf("OnRetry told %q, want the publish limit's message", msg)
		}
	}
	for i := range bot.PublishBurst {
		if _, err := c.Publish(ctx, "demo", fmt.Sprintf("message %d", i)); err != nil {
			t.Fatalf("publish %d of the burst: %v", i, err)
		}
	}
	// The next message is due in about a second, not six.
	clock.Add(bot.PublishEvery - time.Second)
	res, err := c.Publish(ctx, "demo", "one past the burst")
	if err != nil || len(res.Posted) != 1 {
		t.Fatalf("publish past the burst: %+v %v, want it posted after a wait", res, err)
	}
	if len(waits) != 1 || waits[0] != time.Second {
		t.Errorf("waits %v, want one of 1s (the Retry-After of the publish limit)", waits)
	}
	if n := slack.published("one past the burst"); n != 1 {
		t.Errorf("the retried publish was posted %d times, want 1", n)
	}
	if n := len(auditRecords(t, auditPath, "publish")); n != bot.PublishBurst+1 {
		t.Errorf("%d publish audit records, want %d: a refused publish audits nothing", n, bot.PublishBurst+1)
	}
	if n := limitedTotal(t, reg, bot.LimitPublish); n != 1 {
		t.Errorf("signoff_rate_limited_total{limit=publish} = %v, want 1", n)
	}
	if lines := logs.Lines(refusedLine); len(lines) != 1 || !strings.Contains(lines[0], "limit=publish") || !strings.Contains(lines[0], "path=/v1/publish") {
		t.Errorf("log lines %q, want one for the publish limit", lines)
	}
}
