package netpolicy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/netpolicy"
)

// lookedUp is how many times hook saw id asked of the network requests.
func lookedUp(hook *bottest.Commands, id string) int {
	return hook.Sent("HGET", func(a []string) bool {
		return len(a) == 2 && strings.HasSuffix(a[0], ":net:{net}:reqs") && a[1] == id
	})
}

// Every replica hears every decision. One of a request the store holds
// decoded as another kind is not looked up among the network requests;
// a network request's decision still is, and is applied.
func TestDecisionsOfOtherKindsAreNotLookedUp(t *testing.T) {
	w := newWorld(t, "", 0)
	ctx := context.Background()
	hook := &bottest.Commands{}
	w.env.Redis.AddHook(hook)

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
	if lookedUp(hook, nr.ID) == 0 {
		t.Fatal("the network request's decision was applied without a look-up: the control does not see look-ups")
	}
	time.Sleep(200 * time.Millisecond) // a look-up of the command's, had it started, has landed
	if n := lookedUp(hook, cmd.ID); n != 0 {
		t.Fatalf("the command's decision was looked up among network requests %d times", n)
	}
}
