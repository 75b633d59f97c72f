package nostr_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/adapters/nostr"
	"github.com/signoff/signoff/adapters/nostr/relaytest"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

var _ bot.Channel = (*nostr.Adapter)(nil)

// harness is a real gateway with the adapter as its Nostr channel, talking
// to test relays.
type harness struct {
	env  *bottest.Env
	a    *nostr.Adapter
	sink *countingSink
	logs *logRecorder
	stop func()
}

// countingSink forwards to the gateway and counts ballots by dedup key.
type countingSink struct {
	next bot.VoteSink
	mu   sync.Mutex
	n    map[string]int
}

func (s *countingSink) CastVote(ctx context.Context, b bot.Ballot) (bot.VoteOutcome, error) {
	// Counted once handled, so a test that saw the count sees the vote.
	out, err := s.next.CastVote(ctx, b)
	s.mu.Lock()
	s.n[b.DedupKey]++
	s.mu.Unlock()
	return out, err
}

func (s *countingSink) calls(dedupKey string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[dedupKey]
}

func (s *countingSink) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.n {
		n += v
	}
	return n
}

// start builds the gateway for p and an adapter listening on relays. The
// adapter is made after the gateway because it needs the gateway's key,
// and is then set as its Nostr channel before anything is submitted.
func start(t *testing.T, p bot.Persona, relays []string, tweak ...func(*nostr.Config)) *harness {
	t.Helper()
	env := bottest.New(t, p, nil)
	h := &harness{env: env, sink: &countingSink{next: env.Gateway, n: map[string]int{}}, logs: &logRecorder{}}
	h.a, h.stop = runAdapter(t, env, h.sink, h.logs, relays, tweak...)
	env.Gateway.Channels = map[bot.Platform]bot.Channel{bot.Nostr: h.a}
	return h
}

func runAdapter(t *testing.T, env *bottest.Env, sink bot.VoteSink, logs *logRecorder, relays []string, tweak ...func(*nostr.Config)) (*nostr.Adapter, func()) {
	t.Helper()
	cfg := nostr.Config{
		Key:    env.Key,
		Relays: relays,
		Pending: func(ctx context.Context) ([]*bot.Request, error) {
			return env.Gateway.List(ctx, bot.Filter{Status: bot.Pending})
		},
		Logger:     slog.New(logs),
		MinBackoff: 50 * time.Millisecond,
		MaxBackoff: 400 * time.Millisecond,
	}
	for _, f := range tweak {
		f(&cfg)
	}
	a, err := nostr.New(cfg, sink)
	if err != nil {
		t.Fatalf("new adapter: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return a, stop
}

func persona(owner bottest.Person, members []bottest.Person, quorum int, channels ...bot.ChannelConfig) bot.Persona {
	p := bot.Persona{
		Name:           "demo",
		Owner:          &bot.Person{Name: owner.Name, Identities: []bot.Identity{owner.Identity()}},
		ApprovalQuorum: quorum,
		DenyQuorum:     1,
		Timeout:        time.Minute,
		Channels:       channels,
	}
	for _, m := range members {
		p.Members = append(p.Members, bot.Person{Name: m.Name, Identities: []bot.Identity{m.Identity()}})
	}
	return p
}

func noteChannel(relays ...string) bot.ChannelConfig {
	return bot.ChannelConfig{Platform: bot.Nostr, Relays: relays, Mode: "note"}
}

func urls(rs ...*relaytest.Relay) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.URL())
	}
	return out
}

func (h *harness) submit(t *testing.T) *bot.Request {
	t.Helper()
	r := h.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "rm -rf /srv/data", Reason: "free disk"})
	if r.Status != bot.Pending {
		t.Fatalf("submitted request is %s (%s), want pending", r.Status, r.DecisionReason)
	}
	return r
}

func (h *harness) get(t *testing.T, id string) *bot.Request {
	t.Helper()
	r, err := h.env.Gateway.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return r
}

// reaction is p's NIP-25 reaction to event target (of the gateway's).
func reaction(p bottest.Person, target, gatewayKey, content string, at time.Time) gonostr.Event {
	ev := gonostr.Event{
		Kind: gonostr.KindReaction, CreatedAt: gonostr.Timestamp(at.Unix()), Content: content,
		Tags: gonostr.Tags{{"e", target}, {"p", gatewayKey}, {"k", "1"}},
	}
	if err := p.Key.Sign(&ev); err != nil {
		panic(err)
	}
	return ev
}

// publish sends ev to a relay as a person's client does: go-nostr's
// Connect and Publish, waiting for the relay's OK.
func publish(t *testing.T, relayURL string, ev gonostr.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, closeRelay, err := relaytest.Connect(ctx, relayURL)
	if err != nil {
		t.Fatalf("connect to %s: %v", relayURL, err)
	}
	defer closeRelay()
	if err := r.Publish(ctx, ev); err != nil {
		t.Fatalf("publish %s to %s: %v", ev.ID, relayURL, err)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// eventually polls cond until it holds or 10s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func subscribed(r *relaytest.Relay) func() bool {
	return func() bool { open, _ := r.Subscriptions(); return open > 0 }
}

// logRecorder is an slog.Handler keeping every record (and printing them
// with -v).
type logRecorder struct {
	mu   sync.Mutex
	recs []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	l.recs = append(l.recs, b.String())
	l.mu.Unlock()
	if testing.Verbose() {
		fmt.Fprintln(os.Stderr, "  adapter:", b.String())
	}
	return nil
}

// count is how many records contain every one of parts.
func (l *logRecorder) count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.recs {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(s, p) }) {
			n++
		}
	}
	return n
}
