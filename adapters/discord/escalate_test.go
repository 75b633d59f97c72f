package discord_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
)

// An escalation's re-post pings exactly the people it calls on (content
// and allowed_mentions); a person with no Discord identity is named in
// plain text; reminders ping no one.
func TestEscalationPingsExactlyTheNamedMembers(t *testing.T) {
	p := persona(2)
	p.Members = append(p.Members, bot.Person{Name: "dave @everyone"})
	p.Remind = time.Minute
	p.Escalate = &bot.Escalation{After: 3 * time.Minute, To: []string{"bob", "dave @everyone"}}
	h := start(t, p, true)
	r, _ := h.submit(t, "terraform destroy")
	type body struct {
		Content         string `json:"content"`
		AllowedMentions struct {
			Parse []string `json:"parse"`
			Users []string `json:"users"`
		} `json:"allowed_mentions"`
	}
	last := func(n int) body {
		t.Helper()
		posts := h.fake.Posts()
		if len(posts) != n {
			t.Fatalf("%d posts, want %d", len(posts), n)
		}
		var b body
		if err := json.Unmarshal(posts[n-1].Body, &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	h.env.Gateway.Nudge(t.Context(), r.CreatedAt.Add(time.Minute))
	if b := last(2); strings.Contains(b.Content, "<@") || len(b.AllowedMentions.Users) != 0 || len(b.AllowedMentions.Parse) != 0 {
		t.Errorf("reminder mentions someone: %+v", b)
	}
	h.env.Gateway.Nudge(t.Context(), r.CreatedAt.Add(3*time.Minute))
	b := last(3)
	if !slices.Equal(b.AllowedMentions.Users, []string{bob}) || len(b.AllowedMentions.Parse) != 0 {
		t.Errorf("allowed_mentions = %+v, want users [bob] only", b.AllowedMentions)
	}
	if strings.Count(b.Content, "<@") != 1 || !strings.Contains(b.Content, "escalated to <@"+bob+">, dave \\@everyone: still needs ") {
		t.Errorf("content = %q, want bob pinged and dave named in plain text", b.Content)
	}
	for _, other := range []string{alice, carol, agentID} {
		if strings.Contains(b.Content, other) {
			t.Errorf("escalation mentions %s: %q", other, b.Content)
		}
	}
}
