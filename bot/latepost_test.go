package bot_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// slowChannel posts only after the request it posts has expired and the
// decision's follow-up has run, and
// records the edits it is asked for.
type slowChannel struct {
	env     *bottest.Env
	mu      sync.Mutex
	updated map[string]bot.Status // message id → status shown
}

func (c *slowChannel) Post(ctx context.Context, r *bot.Request, _ bot.Persona, _ bot.ChannelConfig) ([]bot.MessageRef, error) {
	for {
		cur, err := c.env.Gateway.Get(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		// Return only once the decision's follow-up has read the request
		// (it audits after reading), so only the late path can edit this.
		if audit, _ := os.ReadFile(c.env.AuditPath); cur.Status.Final() && strings.Contains(string(audit), `"type":"decision"`) {
			return []bot.MessageRef{{Platform: bot.Slack, Channel: "C1", ID: "msg-" + r.ID}}, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (c *slowChannel) Publish(context.Context, string, bot.ChannelConfig, string) (bot.MessageRef, error) {
	return bot.MessageRef{}, errors.New("slowChannel publishes nothing")
}

func (c *slowChannel) Update(_ context.Context, r *bot.Request, refs []bot.MessageRef) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range refs {
		c.updated[m.ID] = r.Status
	}
	return nil
}

// TestDecidedWhilePostingStillEdited: a request decided before its post
// returned still has that post edited to show the outcome.
func TestDecidedWhilePostingStillEdited(t *testing.T) {
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}},
		DenyQuorum: 1, Timeout: time.Minute, Channels: []bot.ChannelConfig{{Platform: bot.Slack, Target: "C1"}}}
	ch := &slowChannel{updated: map[string]bot.Status{}}
	env := bottest.New(t, p, map[bot.Platform]bot.Channel{bot.Slack: ch})
	ch.env = env
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy", Timeout: bot.Duration(50 * time.Millisecond)})
	if r.Status != bot.Expired {
		t.Fatalf("status = %s, want expired before the post returned", r.Status)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ch.mu.Lock()
		got := ch.updated["msg-"+r.ID]
		ch.mu.Unlock()
		if got == bot.Expired {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the late post shows %q, want it edited to expired", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
