package netpolicy_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/netpolicy"
)

// lookups records the fields HGET asks of a hash whose key ends in suffix.
type lookups struct {
	suffix string
	mu     sync.Mutex
	fields map[string]int
}

func (l *lookups) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (l *lookups) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		l.note(cmd)
		return next(ctx, cmd)
	}
}
func (l *lookups) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, c := range cmds {
			l.note(c)
		}
		return next(ctx, cmds)
	}
}
func (l *lookups) note(cmd goredis.Cmder) {
	a := cmd.Args()
	if len(a) == 3 && strings.EqualFold(fmt.Sprint(a[0]), "hget") && strings.HasSuffix(fmt.Sprint(a[1]), l.suffix) {
		l.mu.Lock()
		l.fields[fmt.Sprint(a[2])]++
		l.mu.Unlock()
	}
}
func (l *lookups) of(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fields[id]
}

// Every replica hears every decision. One of a request the store holds
// decoded as another kind is not looked up among the network requests;
// a network request's decision still is, and is applied.
func TestDecisionsOfOtherKindsAreNotLookedUp(t *testing.T) {
	w := newWorld(t, "", 0)
	ctx := context.Background()
	l := &lookups{suffix: ":net:{net}:reqs", fields: map[string]int{}}
	w.env.Redis.AddHook(l)

	cmd := w.env.Submit(t, bot.NewRequest{Persona: "demo", Kind: bot.KindCommand, Action: "terraform apply"})
	if _, err := w.env.Gateway.Get(ctx, cmd.ID); err != nil { // read here: decoded
		t.Fatal(err)
	}
	if _, err := w.env.Gateway.CastVote(ctx, *ballot(t, w.alice, cmd, "✅")); err != nil {
		t.Fatal(err)
	}
	// The control: a network request approved by a plain vote is applied
	// by the service as it hears the decision, after the command's.
	nr := w.file(t, netpolicy.Dest{Host: "proxy.golang.org", Port: 443, Program: "/usr/bin/go"})
	if _, err := w.env.Gateway.CastVote(ctx, *ballot(t, w.alice, nr, "✅")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, applied, err := w.env.Store.AppliedAt(ctx, nr.ID); err == nil && applied {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the network request's decision was not applied")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if l.of(nr.ID) == 0 {
		t.Fatal("the network request's decision was applied without a look-up: the control does not see look-ups")
	}
	time.Sleep(200 * time.Millisecond) // a look-up of the command's, had it started, has landed
	if n := l.of(cmd.ID); n != 0 {
		t.Fatalf("the command's decision was looked up among network requests %d times", n)
	}
}
