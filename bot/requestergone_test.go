package bot_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// cancellingChannel cancels the requester's context while it posts, as a
// hook killed while the gateway is still posting its request does.
type cancellingChannel struct{ cancel context.CancelFunc }

func (c *cancellingChannel) Post(ctx context.Context, r *bot.Request, _ bot.Persona, _ bot.ChannelConfig) ([]bot.MessageRef, error) {
	c.cancel()
	time.Sleep(20 * time.Millisecond) // the requester's connection is gone by now
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return []bot.MessageRef{{Platform: bot.Slack, Channel: "C1", ID: "msg-" + r.ID}}, nil
}

func (c *cancellingChannel) Update(context.Context, *bot.Request, []bot.MessageRef) error { return nil }

func (c *cancellingChannel) Publish(context.Context, string, bot.ChannelConfig, string) (bot.MessageRef, error) {
	return bot.MessageRef{}, errors.New("cancellingChannel publishes nothing")
}

// TestRequesterGoneWhilePostingLeavesNoOrphan: once a request exists, its
// posting and the record of its messages finish even if the requester goes
// away meanwhile, and Submit returns it (so the API can withdraw it after
// the grace). Before, the post was cut, its messages were never recorded
// (no later edit could reach them) and Submit failed, so nothing withdrew
// a request left pending with no one waiting.
func TestRequesterGoneWhilePostingLeavesNoOrphan(t *testing.T) {
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}},
		DenyQuorum: 1, Timeout: time.Minute, Channels: []bot.ChannelConfig{{Platform: bot.Slack, Target: "C1"}}}
	ch := &cancellingChannel{}
	env := bottest.New(t, p, map[bot.Platform]bot.Channel{bot.Slack: ch})
	ctx, cancel := context.WithCancel(context.Background())
	ch.cancel = cancel
	r, err := env.Gateway.Submit(ctx, bot.NewRequest{Persona: "demo", Action: "git push --force origin main"})
	if err != nil {
		t.Fatalf("submit with the requester gone mid-post: %v", err)
	}
	if r.Status != bot.Pending {
		t.Fatalf("status %s, want pending (withdrawing is the API's, after its grace)", r.Status)
	}
	got, err := env.Gateway.Get(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(got.Messages, func(m bot.MessageRef) bool { return m.ID == "msg-"+r.ID }) {
		t.Fatalf("messages %+v, want the Slack post recorded", got.Messages)
	}
}
