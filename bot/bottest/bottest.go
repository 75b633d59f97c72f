// Package bottest builds a real gateway for tests: the bot.Gateway on the
// real Redis store (embedded miniredis, or the server named by
// SIGNOFF_TEST_REDIS_URL under a key prefix of its own), a gateway key and
// an audit log in a temporary folder. Adapters' tests hand it their channel
// and drive it through their platform's fake.
package bottest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/nbd-wtf/go-nostr"
	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

// Env is a running gateway and what it is made of.
type Env struct {
	Gateway   *bot.Gateway
	Store     *qredis.Store
	Redis     goredis.UniversalClient
	Key       *signing.Key // the gateway's key
	Audit     *signing.AuditLog
	AuditPath string
	logs      *Buffer
}

// Logs is what the gateway has logged so far (at Info and above).
func (e *Env) Logs() string { return e.logs.String() }

// Backends names the Redis servers a test should run against: "embedded"
// always, and "redis" (SIGNOFF_TEST_REDIS_URL) when that is set.
func Backends() []string {
	if os.Getenv("SIGNOFF_TEST_REDIS_URL") != "" {
		return []string{"embedded", "redis"}
	}
	return []string{"embedded"}
}

// Server is one Redis for one test: an embedded miniredis of its own, or
// the real server under a fresh key prefix. Clients made by Client share
// it, so a test can close one and inspect with another.
type Server struct {
	Name   string
	Prefix string
	url    string
	m      *miniredis.Miniredis
}

// Start returns a Server of the named backend (see Backends). An embedded
// one is stopped, and a real one's keys removed, when the test ends.
func Start(t testing.TB, backend string) *Server {
	t.Helper()
	s := &Server{Name: backend, Prefix: "signofftest:" + randHex(6)}
	switch backend {
	case "embedded":
		// As qredis.Embedded: TTLs follow the clock, no listener.
		var stop func()
		s.m, stop = qredis.StartEmbedded()
		t.Cleanup(stop)
	case "redis":
		s.url = os.Getenv("SIGNOFF_TEST_REDIS_URL")
		if s.url == "" {
			t.Skip("SIGNOFF_TEST_REDIS_URL is not set")
		}
		c := s.Client(t)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("SIGNOFF_TEST_REDIS_URL=%s does not answer: %v", s.url, err)
		}
		t.Cleanup(func() { deletePrefix(c, s.Prefix) })
	default:
		t.Fatalf("unknown backend %q", backend)
	}
	return s
}

// StartPrivate returns a Server on a redis-server of the test's own
// (StartRedisServer), for a test that disturbs the whole server, as
// CLIENT KILL TYPE pubsub does: on the shared SIGNOFF_TEST_REDIS_URL it
// would cut the subscriptions of every package's tests running beside it.
// It skips the test when redis-server is not installed.
func StartPrivate(t testing.TB) *Server {
	t.Helper()
	r := StartRedisServer(t)
	return &Server{Name: "redis", Prefix: "signofftest:" + randHex(6), url: r.URL()}
}

// Client returns a new client to s, closed when the test ends.
func (s *Server) Client(t testing.TB) goredis.UniversalClient {
	t.Helper()
	var c goredis.UniversalClient
	if s.m != nil {
		c = qredis.EmbeddedClient(s.m)
	} else {
		var err error
		if c, err = qredis.Open(s.url); err != nil {
			t.Fatalf("SIGNOFF_TEST_REDIS_URL: %v", err)
		}
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Store returns a store on a new client to s.
func (s *Server) Store(t testing.TB) *qredis.Store {
	return qredis.New(s.Client(t), s.Prefix)
}

// CountedStore is Store on a client of its own whose commands are
// recorded, for tests of what a store sends (and the client, for a test
// that reaches past the store).
func (s *Server) CountedStore(t testing.TB) (*qredis.Store, *Commands, goredis.UniversalClient) {
	rdb := s.Client(t)
	hook := &Commands{}
	rdb.AddHook(hook)
	return qredis.New(rdb, s.Prefix), hook, rdb
}

func deletePrefix(c goredis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, prefix+":*", 1000).Result()
		if err != nil {
			return
		}
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}

// Redis returns a client and a fresh key prefix: the server named by
// SIGNOFF_TEST_REDIS_URL when set, else an embedded one.
func Redis(t testing.TB) (goredis.UniversalClient, string) {
	t.Helper()
	prefix := "signofftest:" + randHex(6)
	if url := os.Getenv("SIGNOFF_TEST_REDIS_URL"); url != "" {
		c, err := qredis.Open(url)
		if err != nil {
			t.Fatalf("SIGNOFF_TEST_REDIS_URL: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("SIGNOFF_TEST_REDIS_URL=%s does not answer: %v", url, err)
		}
		t.Cleanup(func() {
			deletePrefix(c, prefix)
			c.Close()
		})
		return c, prefix
	}
	c, stop, err := qredis.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return c, prefix
}

// New starts a gateway serving persona p, posting through channels.
func New(t testing.TB, p bot.Persona, channels map[bot.Platform]bot.Channel) *Env {
	t.Helper()
	rdb, prefix := Redis(t)
	return NewOn(t, rdb, prefix, p, channels)
}

// NewOn is New on a given client and key prefix (see Server).
func NewOn(t testing.TB, rdb goredis.UniversalClient, prefix string, p bot.Persona, channels map[bot.Platform]bot.Channel) *Env {
	t.Helper()
	store := qredis.New(rdb, prefix)
	ctx := context.Background()
	if err := store.PutPersona(ctx, p); err != nil {
		t.Fatalf("put persona: %v", err)
	}
	key := fleetKey(prefix)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	audit, err := signing.OpenAuditWith(ctx, auditPath, key, signing.AuditOptions{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	logs := &Buffer{}
	g := &bot.Gateway{
		Store:      store,
		Signer:     key,
		Audit:      audit,
		Outbox:     store,
		Channels:   channels,
		Logger:     slog.New(slog.NewTextHandler(logs, nil)),
		SweepEvery: 20 * time.Millisecond,
	}
	if testing.Verbose() {
		g.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs, os.Stderr), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if err := g.Start(ctx); err != nil {
		t.Fatalf("start gateway: %v", err)
	}
	t.Cleanup(func() {
		g.Close()
		audit.Close()
	})
	return &Env{Gateway: g, Store: store, Redis: rdb, Key: key, Audit: audit, AuditPath: auditPath, logs: logs}
}

// Submit submits a request and fails the test on error.
func (e *Env) Submit(t testing.TB, n bot.NewRequest) *bot.Request {
	t.Helper()
	r, err := e.Gateway.Submit(context.Background(), n)
	if err != nil {
		t.Fatalf("submit %+v: %v", n, err)
	}
	return r
}

// Await waits up to 10s for r to be decided and returns it.
func (e *Env) Await(t testing.TB, id string) *bot.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		r, err := e.Gateway.Wait(ctx, id, 10*time.Second)
		if err != nil {
			t.Fatalf("wait for %s: %v", id, err)
		}
		if r.Status.Final() {
			return r
		}
		if ctx.Err() != nil {
			t.Fatalf("request %s still %s after 10s", id, r.Status)
		}
	}
}

// Person is a test voter with a Nostr key.
type Person struct {
	Name string
	Key  *signing.Key
}

// NewPerson makes a person with a fresh key.
func NewPerson(name string) Person { return Person{Name: name, Key: signing.NewKey()} }

// Identity is the person's Nostr identity.
func (p Person) Identity() bot.Identity {
	return bot.Identity{Platform: bot.Nostr, ID: p.Key.PublicKey()}
}

// Reaction signs a NIP-25 reaction by p to request r, as `signoff approve`
// does, and returns its JSON.
func (p Person) Reaction(r *bot.Request, content string, at time.Time) []byte {
	ev := nostr.Event{
		Kind: nostr.KindReaction, CreatedAt: nostr.Timestamp(at.Unix()), Content: content,
		Tags: nostr.Tags{{"e", r.EventID}, {"p", r.GatewayKey}, {"k", "1"}},
	}
	if err := p.Key.Sign(&ev); err != nil {
		panic(err)
	}
	b, _ := json.Marshal(ev)
	return b
}

// React sends p's reaction to the gateway through the same path as
// POST /v1/nostr/events.
func (e *Env) React(t testing.TB, p Person, r *bot.Request, content string) bot.VoteOutcome {
	t.Helper()
	raw := p.Reaction(r, content, time.Now())
	re, err := signing.ParseReaction(raw, time.Now())
	if err != nil {
		t.Fatalf("parse own reaction: %v", err)
	}
	out, err := e.Gateway.CastVote(context.Background(), re.Ballot(raw))
	if err != nil {
		t.Fatalf("cast %s's %s: %v", p.Name, content, err)
	}
	return out
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// fleetKeys gives every gateway on one store prefix the same key, as
// replicas of one fleet share SIGNOFF_NOSTR_KEY: clients pin one key, and
// a receipt sealed by one replica is opened by the others.
var fleetKeys sync.Map

func fleetKey(prefix string) *signing.Key {
	k, _ := fleetKeys.LoadOrStore(prefix, signing.NewKey())
	return k.(*signing.Key)
}

// Chain reads the store's whole audit chain (every replica's records, in
// one order), verifies it under the gateway key and returns its records.
func (e *Env) Chain(t testing.TB) []signing.Record {
	t.Helper()
	var (
		buf   []byte
		after uint64
		recs  []signing.Record
	)
	for {
		lines, err := e.Store.AuditRecords(context.Background(), after, 1000)
		if err != nil {
			t.Fatalf("read the audit chain: %v", err)
		}
		for _, l := range lines {
			var r signing.Record
			if err := json.Unmarshal(l, &r); err != nil {
				t.Fatalf("audit record %q: %v", l, err)
			}
			recs = append(recs, r)
			buf = append(append(buf, l...), '\n')
			after++
		}
		if len(lines) < 1000 {
			break
		}
	}
	rep := signing.VerifyChain(bytes.NewReader(buf), signing.VerifyOptions{Signer: e.Key.PublicKey()})
	if !rep.OK() {
		t.Fatalf("the store's audit chain does not verify: %v %v", rep.Break, rep.Truncated)
	}
	return recs
}
