package slack_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/adapters/slack/slackfake"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/grants"
)

// TestAlwaysButtonGrants: a request with a grant scope gets a third button
// and a line with the exact scope and expiry; the owner's click approves
// and makes the grant.
func TestAlwaysButtonGrants(t *testing.T) {
	h := newHarness(t, ownerPersona())
	h.env.Gateway.Grants = &grants.Maker{Store: h.env.Store}
	scope := &bot.GrantScope{Tool: "bash", Program: "terraform", Subcommand: "apply", Workspace: "/srv/infra", Level: bot.Dangerous, Reasons: []string{}, TTL: 2 * time.Hour}
	r := h.env.Submit(t, bot.NewRequest{Persona: h.persona, Action: "terraform apply", Reason: "ship", GrantScope: scope})
	post, err := h.fake.Next(h.ctx(), "chat.postMessage")
	if err != nil {
		t.Fatal(err)
	}
	blocks := string(post.Blocks)
	if !strings.Contains(blocks, `"action_id":"signoff_always"`) || !strings.Contains(blocks, "terraform apply") ||
		!strings.Contains(blocks, "/srv/infra") || !strings.Contains(blocks, "2h0m0s") {
		t.Fatalf("card blocks %s: want an Always button and the scope with its expiry", blocks)
	}
	if status, body := h.postClick(slackfake.BlockActions(alice, channelID, post.TS, "signoff_always", r.ID, "1700000010.000001", h.fake.ResponseURL("c"))); status != http.StatusOK {
		t.Fatalf("POST /slack/interactions = %d %s", status, body)
	}
	if got := h.env.Await(t, r.ID); got.Status != bot.Approved || !got.Always {
		t.Fatalf("after alice's Always: %s always=%v", got.Status, got.Always)
	}
	gs, err := h.env.Store.Grants(context.Background(), h.persona, time.Now())
	if err != nil || len(gs) != 1 || gs[0].ID != r.ID || gs[0].By[0] != "alice" {
		t.Fatalf("grants = %+v %v, want one by alice", gs, err)
	}
}

// TestNoAlwaysButtonWithoutScope: nothing to grant, no third button.
func TestNoAlwaysButtonWithoutScope(t *testing.T) {
	h := newHarness(t, ownerPersona())
	_, post := h.submit("rm -rf /tmp/build")
	if strings.Contains(string(post.Blocks), "signoff_always") {
		t.Errorf("an Always button on a request with no scope: %s", post.Blocks)
	}
}
