package redis_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/tokens"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// newToken makes a token record called name (its secret is not needed
// here: the store keeps the hash).
func newToken(t testing.TB, name string) *tokens.Token {
	t.Helper()
	_, tok, err := tokens.New(tokens.NewSecret(), tokens.Spec{Name: name, Scopes: []tokens.Scope{tokens.ReadRequests}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// watchTokens runs s.WatchTokens until the test ends (or stop is called)
// and returns its (re)subscriptions, the first one waited for.
func watchTokens(t testing.TB, s *qredis.Store) (subscribed <-chan struct{}, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{}, 16)
	var wg sync.WaitGroup
	wg.Go(func() { s.WatchTokens(ctx, func() { ch <- struct{}{} }) })
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	awaitSubscribed(t, ch)
	return ch, stop
}

func awaitSubscribed(t testing.TB, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("not subscribed to the token channel after 10s")
	}
}

// until polls cond every millisecond for up to 10 s.
func until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// warm opens s's connection (its handshake is sent through hook) and
// forgets what hook recorded.
func warm(t testing.TB, s *qredis.Store, hook *bottest.Commands) {
	t.Helper()
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	hook.Reset()
}

func gone(s *qredis.Store, id string) bool {
	_, err := s.Token(context.Background(), id)
	return bot.ErrorCode(err) == bot.ENotFound
}

// TestTokenFromMemorySendsNoCommand: with no subscription to the token
// channel every Token and HasTokens reads Redis, as before; while one is
// made, the second call answers from memory and sends nothing; once it
// ends, every call reads again.
func TestTokenFromMemorySendsNoCommand(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			a := srv.Store(t)
			b, hook, _ := srv.CountedStore(t)
			ctx := context.Background()
			tok := newToken(t, "agent")
			if err := a.CreateToken(ctx, tok); err != nil {
				t.Fatal(err)
			}
			warm(t, b, hook)
			calls := func() {
				t.Helper()
				for range 2 {
					got, err := b.Token(ctx, tok.ID)
					if err != nil || got.Name != "agent" {
						t.Fatalf("Token = %+v, %v", got, err)
					}
					if any, err := b.HasTokens(ctx); err != nil || !any {
						t.Fatalf("HasTokens = %v, %v", any, err)
					}
				}
			}
			calls()
			if n := hook.Trips(); n != 4 {
				t.Errorf("not subscribed: two Token and two HasTokens sent %d round trips (%s), want 4: each reads", n, hook)
			}
			_, stop := watchTokens(t, b)
			warm(t, b, hook)
			calls()
			if n := hook.Trips(); n != 2 {
				t.Errorf("subscribed: two Token and two HasTokens sent %d round trips (%s), want 2: the second of each from memory", n, hook)
			}
			hook.Reset()
			got, _ := b.Token(ctx, tok.ID)
			got.Name, got.Scopes[0] = "changed", tokens.Admin
			if again, _ := b.Token(ctx, tok.ID); again.Name != "agent" || hook.Trips() != 0 {
				t.Errorf("after the caller changed its copy: %q, %d round trips; want agent, from memory", again.Name, hook.Trips())
			}
			stop()
			warm(t, b, hook)
			calls()
			if n := hook.Trips(); n != 4 {
				t.Errorf("after the watch ended: %d round trips (%s), want 4", n, hook)
			}
		})
	}
}

// TestTokenRevokedOnAnotherReplicaIsRefusedThere: replica B answered a
// token from memory; it is revoked through replica A, and B refuses it as
// the revocation's message reaches it. B keeps what it reads for an hour
// here: only the message can make it read again.
func TestTokenRevokedOnAnotherReplicaIsRefusedThere(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			a := srv.Store(t)
			b, hook, _ := srv.CountedStore(t)
			b.KeepTokensFor(time.Hour)
			ctx := context.Background()
			tok := newToken(t, "agent")
			if err := a.CreateToken(ctx, tok); err != nil {
				t.Fatal(err)
			}
			watchTokens(t, b) // after: its message is not heard
			warm(t, b, hook)
			for range 2 {
				if _, err := b.Token(ctx, tok.ID); err != nil {
					t.Fatal(err)
				}
				if any, _ := b.HasTokens(ctx); !any {
					t.Fatal("HasTokens = false with a token")
				}
			}
			if n := hook.Trips(); n != 2 {
				t.Fatalf("%d round trips (%s), want 2: the second calls from memory", n, hook)
			}
			if _, err := a.RevokeToken(ctx, "agent"); err != nil {
				t.Fatal(err)
			}
			until(t, "B refuses the token revoked on A", func() bool { return gone(b, tok.ID) })
			until(t, "B says no token exists", func() bool { any, _ := b.HasTokens(ctx); return !any })
			hook.Reset()
			if !gone(b, tok.ID) || hook.Trips() != 1 {
				t.Errorf("an unknown token: %d round trips, want 1: it is read every time", hook.Trips())
			}
		})
	}
}

// TestFirstTokenOnAnotherReplicaIsHeard: replica B remembers that no
// token exists; the first is made on the store by another (a replica, or
// `SIGNOFF_REDIS_URL=… signoff tokens create`, which runs the same code),
// and B says one exists as its message reaches it.
func TestFirstTokenOnAnotherReplicaIsHeard(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			a := srv.Store(t)
			b, hook, _ := srv.CountedStore(t)
			b.KeepTokensFor(time.Hour)
			watchTokens(t, b)
			warm(t, b, hook)
			ctx := context.Background()
			for range 3 {
				if any, err := b.HasTokens(ctx); any || err != nil {
					t.Fatalf("HasTokens on an empty store = %v, %v", any, err)
				}
			}
			if n := hook.Trips(); n != 1 {
				t.Fatalf("%d round trips (%s), want 1: then from memory", n, hook)
			}
			if err := a.CreateToken(ctx, newToken(t, "first")); err != nil {
				t.Fatal(err)
			}
			until(t, "B hears of the first token", func() bool { any, _ := b.HasTokens(ctx); return any })
		})
	}
}

// TestCreateFirstTokenRefusesASecond: CreateFirstToken makes a token only
// if none exists, in the same step (no check a replica's memory, or a call
// beside it, could make stale).
func TestCreateFirstTokenRefusesASecond(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			s := bottest.Start(t, backend).Store(t)
			ctx := context.Background()
			if err := s.CreateFirstToken(ctx, newToken(t, "me")); err != nil {
				t.Fatal(err)
			}
			err := s.CreateFirstToken(ctx, newToken(t, "agent"))
			if bot.ErrorCode(err) != bot.EUnauthorized {
				t.Errorf("a second first token: %v, want unauthorized", err)
			}
			if ts, _ := s.Tokens(ctx); len(ts) != 1 || ts[0].Name != "me" {
				t.Errorf("%d tokens, want only me", len(ts))
			}
			if err := s.CreateToken(ctx, newToken(t, "agent")); err != nil {
				t.Errorf("CreateToken beside one: %v", err)
			}
		})
	}
}

// TestLostSubscriptionForgetsTokens: a change no replica was told of (as
// one published while B's subscription was down: lost) is answered from
// B's memory until its subscription is cut and made again; then B reads
// Redis, and refuses the token. Cuts only B's connection (by its client
// name), not every subscriber of the shared Redis.
func TestLostSubscriptionForgetsTokens(t *testing.T) {
	url := os.Getenv("SIGNOFF_TEST_REDIS_URL")
	if url == "" {
		t.Skip("needs SIGNOFF_TEST_REDIS_URL (CLIENT KILL)")
	}
	srv := bottest.Start(t, "redis")
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.ClientName = "signofftest-tokens-" + srv.Prefix[len("signofftest:"):]
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	hook := &bottest.Commands{}
	rdb.AddHook(hook)
	b := qredis.New(rdb, srv.Prefix)
	b.KeepTokensFor(time.Hour)
	subs, _ := watchTokens(t, b)
	a := srv.Store(t)
	ctx := context.Background()
	tok := newToken(t, "agent")
	if err := a.CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	until(t, "B remembers the token", func() bool {
		b.Token(ctx, tok.ID)
		hook.Reset()
		b.Token(ctx, tok.ID)
		return hook.Count("HGETALL", tok.ID) == 0
	})
	if err := a.RevokeTokenUnannounced(ctx, "agent"); err != nil {
		t.Fatal(err)
	}
	hook.Reset()
	if gone(b, tok.ID) || hook.Count("HGETALL", tok.ID) != 0 {
		t.Fatalf("before the cut: gone, or read (%s); want the token, from memory (this test shows nothing otherwise)", hook)
	}
	killed, err := killClients(ctx, srv.Client(t), opt.ClientName)
	if err != nil || killed == 0 {
		t.Fatalf("CLIENT KILL of %s: %d killed, %v", opt.ClientName, killed, err)
	}
	awaitSubscribed(t, subs)
	hook.Reset()
	if !gone(b, tok.ID) || hook.Count("HGETALL", tok.ID) != 1 {
		t.Errorf("after resubscribing: sent %s; want refused, read from Redis", hook)
	}
}

// killClients kills the pub/sub connections called name.
func killClients(ctx context.Context, c goredis.UniversalClient, name string) (int, error) {
	list, err := c.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, line := range strings.Split(list, "\n") {
		fields := map[string]string{}
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			fields[k] = v
		}
		if fields["name"] != name {
			continue
		}
		if err := c.Do(ctx, "CLIENT", "KILL", "ID", fields["id"]).Err(); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// TestRedisRestartForgetsTokens: Redis restarts without persistence (its
// tokens gone, nothing announced); once B is subscribed again it reads
// Redis and refuses the token it remembered, and says none exists.
func TestRedisRestartForgetsTokens(t *testing.T) {
	r := bottest.StartRedisServer(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	hook := &bottest.Commands{}
	rdb.AddHook(hook)
	b := qredis.New(rdb, "signofftest")
	b.KeepTokensFor(time.Hour)
	subs, _ := watchTokens(t, b)
	ctx := context.Background()
	tok := newToken(t, "agent")
	if err := b.CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	until(t, "B remembers the token", func() bool {
		b.Token(ctx, tok.ID)
		b.HasTokens(ctx)
		hook.Reset()
		b.Token(ctx, tok.ID)
		b.HasTokens(ctx)
		return hook.Count("HGETALL", tok.ID)+hook.Count("HLEN", "") == 0
	})
	r.Restart()
	awaitSubscribed(t, subs)
	hook.Reset()
	if !gone(b, tok.ID) || hook.Count("HGETALL", tok.ID) != 1 {
		t.Errorf("after the restart: sent %s; want refused, read from Redis", hook)
	}
	if any, err := b.HasTokens(ctx); any || err != nil {
		t.Errorf("HasTokens after the restart = %v, %v; want false", any, err)
	}
}

// TestUnannouncedRevocationHoldsWithinTheBound: a rolling upgrade. A
// replica of the version before the token channel revokes a token and
// announces nothing; a replica of this version that remembered it refuses
// it once its memory is TokenMemoryFor old, not later.
func TestUnannouncedRevocationHoldsWithinTheBound(t *testing.T) {
	srv := bottest.Start(t, bottest.Backends()[len(bottest.Backends())-1])
	old := srv.Store(t)
	b := srv.Store(t)
	watchTokens(t, b)
	ctx := context.Background()
	tok := newToken(t, "agent")
	if err := old.CreateTokenUnannounced(ctx, tok); err != nil {
		t.Fatal(err)
	}
	read := time.Now()
	if _, err := b.Token(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if err := old.RevokeTokenUnannounced(ctx, "agent"); err != nil {
		t.Fatal(err)
	}
	until(t, "B refuses the token revoked unannounced", func() bool { return gone(b, tok.ID) })
	if took := time.Since(read); took > qredis.TokenMemoryFor+time.Second {
		t.Errorf("refused %s after the read, want within %s", took, qredis.TokenMemoryFor)
	}
}

// TestTokenChangesRaceReads: reads on B run all the while tokens are made
// and revoked on A. A read that began before a change and was answered
// after B heard of it must not be kept: once B refuses a revoked token it
// keeps refusing it (B keeps answers for an hour, so a stale one would
// stay), and once it says a token exists it keeps saying so.
func TestTokenChangesRaceReads(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			a := srv.Store(t)
			b := srv.Store(t)
			b.KeepTokensFor(time.Hour)
			watchTokens(t, b)
			for i := range 10 {
				tok := newToken(t, fmt.Sprint("agent-", i))
				ctx, stop := context.WithCancel(context.Background())
				defer stop()
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						for ctx.Err() == nil {
							b.Token(ctx, tok.ID)
							b.HasTokens(ctx)
						}
					})
				}
				if err := a.CreateToken(ctx, tok); err != nil {
					t.Fatal(err)
				}
				until(t, "B says a token exists", func() bool { any, _ := b.HasTokens(ctx); return any })
				time.Sleep(time.Millisecond)
				if _, err := a.RevokeToken(ctx, tok.Name); err != nil {
					t.Fatal(err)
				}
				until(t, "B refuses the revoked token", func() bool { return gone(b, tok.ID) })
				until(t, "B says none exists", func() bool { any, _ := b.HasTokens(ctx); return !any })
				time.Sleep(2 * time.Millisecond)
				for range 20 {
					if !gone(b, tok.ID) {
						t.Fatalf("round %d: B answers the revoked token again", i)
					}
					if any, _ := b.HasTokens(ctx); any {
						t.Fatalf("round %d: B says a token exists again", i)
					}
				}
				stop()
				wg.Wait()
			}
		})
	}
}

// afterReply runs fn once, after the reply to the first command named
// name has come back and before the caller sees it.
type afterReply struct {
	name string
	fn   func()
	once sync.Once
}

func (h *afterReply) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (h *afterReply) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}
func (h *afterReply) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		if strings.EqualFold(cmd.Name(), h.name) {
			h.once.Do(h.fn)
		}
		return err
	}
}

// TestReadAnsweredAfterAChangeIsNotKept: B reads a token (and whether any
// exists); the token is revoked (made) on A and B hears of it after Redis
// answered B's read but before B keeps the answer. B must not keep it: it
// would answer the revoked token (or "none") for an hour here.
func TestReadAnsweredAfterAChangeIsNotKept(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			a := srv.Store(t)
			rdb := srv.Client(t)
			b := qredis.New(rdb, srv.Prefix)
			b.KeepTokensFor(time.Hour)
			watchTokens(t, b)
			ctx := context.Background()
			tok := newToken(t, "agent")
			heardAfter := func(change func() error) func() {
				return func() {
					n := b.TokenChangesHeard()
					if err := change(); err != nil {
						t.Error(err)
					}
					until(t, "B hears of the change", func() bool { return b.TokenChangesHeard() > n })
				}
			}
			rdb.AddHook(&afterReply{name: "hlen", fn: heardAfter(func() error { return a.CreateToken(ctx, tok) })})
			if any, _ := b.HasTokens(ctx); any {
				t.Fatal("the read was answered after the token was made")
			}
			if any, _ := b.HasTokens(ctx); !any {
				t.Error("HasTokens kept the answer read before the first token was heard of: none")
			}
			rdb.AddHook(&afterReply{name: "hgetall", fn: heardAfter(func() error { _, err := a.RevokeToken(ctx, "agent"); return err })})
			if _, err := b.Token(ctx, tok.ID); err != nil {
				t.Fatal("the read was answered after the token was revoked")
			}
			if !gone(b, tok.ID) {
				t.Error("Token kept the answer read before the revocation was heard of")
			}
		})
	}
}

// TestClusterTokenChanges: on Redis Cluster the token scripts stay in the
// {tokens} slot and their messages reach a replica subscribed through
// another connection.
func TestClusterTokenChanges(t *testing.T) {
	addr := clusterServer(t)
	open := func() *qredis.Store {
		rdb, err := qredis.Open("redis://" + addr + "?addr=" + addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Close() })
		return qredis.New(rdb, "signofftest")
	}
	a, b := open(), open()
	b.KeepTokensFor(time.Hour)
	watchTokens(t, b)
	ctx := context.Background()
	if any, _ := b.HasTokens(ctx); any {
		t.Fatal("a token on a new cluster")
	}
	tok := newToken(t, "agent")
	if err := a.CreateFirstToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	until(t, "B hears of the first token", func() bool { any, _ := b.HasTokens(ctx); return any })
	if _, err := b.Token(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RevokeToken(ctx, "agent"); err != nil {
		t.Fatal(err)
	}
	until(t, "B refuses the token revoked on A", func() bool { return gone(b, tok.ID) })
}
