package readiness_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/readiness"
	qredis "github.com/signoff/signoff/quorum/redis"
)

func personas() []bot.Persona {
	owner := &bot.Person{Name: "alice", Identities: []bot.Identity{{Platform: bot.Slack, ID: "U01ALICE"}}}
	return []bot.Persona{{Name: "demo", Owner: owner}, {Name: "ops", Owner: owner}}
}

// emptied removes every key under the store's prefix: what a Redis that
// restarted without persistence holds for this store (the test's own
// prefix only; the shared server is never flushed).
func emptied(t *testing.T, srv *bottest.Server) {
	t.Helper()
	c := srv.Client(t)
	ctx := context.Background()
	keys, err := c.Keys(ctx, srv.Prefix+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("nothing under the prefix to remove")
	}
	for _, k := range keys {
		if err := c.Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEmptiedStoreFailsReadinessAndPersonasAreLoadedAgain(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			store := srv.Store(t)
			k := &readiness.Keeper{Store: store, Personas: personas(), Every: time.Hour, ID: "replica-1"}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := k.Load(ctx); err != nil {
				t.Fatal(err)
			}
			if err := k.Ready(ctx); err != nil {
				t.Fatalf("Ready after Load = %v, want nil", err)
			}

			emptied(t, srv)
			err := k.Ready(ctx)
			if bot.ErrorCode(err) != bot.EUnavailable || !strings.Contains(bot.ErrorMessage(err), "lost its data") {
				t.Fatalf("Ready on the emptied store = %v, want unavailable: lost its data", err)
			}
			if _, err := store.Persona(ctx, "demo"); bot.ErrorCode(err) != bot.ENotFound {
				t.Fatalf("persona before the reload: %v, want not found", err)
			}

			// Ready kicked the reload; Run performs it.
			rctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { k.Run(rctx); close(done) }()
			defer func() { stop(); <-done }()
			for k.Reloads() == 0 {
				if ctx.Err() != nil {
					t.Fatal("the keeper did not reload the emptied store")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := k.Ready(ctx); err != nil {
				t.Fatalf("Ready after the reload = %v, want nil", err)
			}
			for _, name := range []string{"demo", "ops"} {
				if p, err := store.Persona(ctx, name); err != nil || p.Owner == nil || p.Owner.Name != "alice" {
					t.Fatalf("persona %s after the reload = %+v, %v", name, p, err)
				}
			}
		})
	}
}

// A persona key lost on its own (a Cluster master that restarted empty
// while the marker's master kept its data) is noticed too.
func TestLostPersonaIsNoticed(t *testing.T) {
	srv := bottest.Start(t, bottest.Backends()[len(bottest.Backends())-1])
	store := srv.Store(t)
	k := &readiness.Keeper{Store: store, Personas: personas(), Every: 10 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := k.Load(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Client(t).Del(ctx, srv.Prefix+":persona:ops")
	if err := k.Ready(ctx); err == nil {
		t.Fatal("Ready = nil with persona ops gone")
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { k.Run(rctx); close(done) }()
	defer func() { stop(); <-done }()
	for k.Ready(ctx) != nil {
		if ctx.Err() != nil {
			t.Fatal("not ready again after the reload")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := store.Persona(ctx, "ops"); err != nil {
		t.Fatalf("persona ops after the reload: %v", err)
	}
}

func TestUnreachableStoreIsNotReady(t *testing.T) {
	rdb, err := qredis.Open("redis://127.0.0.1:1/0")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	k := &readiness.Keeper{Store: qredis.New(rdb, "x"), Personas: personas()}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.Ready(ctx); bot.ErrorCode(err) != bot.EUnavailable {
		t.Fatalf("Ready on an unreachable store = %v, want unavailable", err)
	}
}
