package discord_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/grants"
)

// TestAlwaysButtonGrants: a request with a grant scope gets a third button
// whose card field shows the exact scope and expiry; the owner's click on
// it approves and makes the grant.
func TestAlwaysButtonGrants(t *testing.T) {
	h := start(t, persona(0), false)
	h.env.Gateway.Grants = &grants.Maker{Store: h.env.Store}
	scope := &bot.GrantScope{Tool: "bash", Program: "terraform", Subcommand: "apply", Workspace: "/srv/infra", Level: bot.Dangerous, Reasons: []string{}, TTL: 2 * time.Hour}
	r := h.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform apply", Reason: "ship", GrantScope: scope})
	var ref bot.MessageRef
	for _, m := range r.Messages {
		if m.Platform == bot.Discord {
			ref = m
		}
	}
	posts := h.fake.Posts()
	if len(posts) != 1 {
		t.Fatalf("%d posts", len(posts))
	}
	body := string(posts[0].Body)
	c := parseCard(t, posts[0].Body)
	if !strings.Contains(body, `"custom_id":"signoff:always:`+r.ID+`"`) {
		t.Errorf("no Always button in %s", body)
	}
	if got := c.field("♾️ Always"); !strings.Contains(got, "terraform apply") || !strings.Contains(got, "/srv/infra") || !strings.Contains(got, "2h0m0s") {
		t.Errorf("Always field = %q, want the scope and the expiry", got)
	}
	h.click(t, ref, alice, bot.Always, r.ID)
	if got := h.env.Await(t, r.ID); got.Status != bot.Approved || !got.Always {
		t.Fatalf("after alice's Always: %s always=%v", got.Status, got.Always)
	}
	gs, err := h.env.Store.Grants(context.Background(), "demo", time.Now())
	if err != nil || len(gs) != 1 || gs[0].ID != r.ID || gs[0].By[0] != "alice" {
		t.Fatalf("grants = %+v %v, want one by alice", gs, err)
	}
}

// TestNoAlwaysButtonWithoutScope: a request with nothing to grant has
// Approve and Deny only.
func TestNoAlwaysButtonWithoutScope(t *testing.T) {
	h := start(t, persona(0), false)
	h.submit(t, "rm -rf /tmp/build")
	if body := string(h.fake.Posts()[0].Body); strings.Contains(body, "signoff:always:") {
		t.Errorf("an Always button on a request with no scope: %s", body)
	}
}
