package slack_test

import (
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
)

// An escalation's re-post pings exactly the people it calls on; a person
// with no Slack identity is named in plain text; reminders ping no one.
func TestEscalationPingsExactlyTheNamedMembers(t *testing.T) {
	p := quorumPersona()
	p.Members = append(p.Members, bot.Person{Name: "dave <@U0EVIL>"})
	p.Remind = time.Minute
	p.Escalate = &bot.Escalation{After: 3 * time.Minute, To: []string{"bob", "dave <@U0EVIL>"}}
	h := newHarness(t, p)
	r, first := h.submit("terraform destroy")
	if strings.Contains(first.Form.Get("text"), "<@") || strings.Contains(first.Form.Get("blocks"), `"user"`) {
		t.Fatalf("first post mentions someone: %s", first.Form)
	}
	h.env.Gateway.Nudge(h.ctx(), r.CreatedAt.Add(time.Minute))
	remind, err := h.fake.Next(h.ctx(), "chat.postMessage")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(remind.Form.Get("text"), "<@") || strings.Contains(remind.Form.Get("blocks"), `"user"`) || strings.Contains(remind.Form.Get("text"), "escalated") {
		t.Errorf("reminder mentions someone: %s", remind.Form)
	}
	h.env.Gateway.Nudge(h.ctx(), r.CreatedAt.Add(3*time.Minute))
	esc, err := h.fake.Next(h.ctx(), "chat.postMessage")
	if err != nil {
		t.Fatal(err)
	}
	text, blocks := esc.Form.Get("text"), esc.Form.Get("blocks")
	if got := strings.Count(text, "<@"); got != 1 || !strings.Contains(text, "escalated to <@"+bob+">, dave &lt;@U0EVIL&gt;: still needs ") {
		t.Errorf("escalation text = %q, want exactly bob pinged and dave named in plain text", text)
	}
	if got := strings.Count(blocks, `"type":"user"`); got != 1 || !strings.Contains(blocks, `"user_id":"`+bob+`"`) {
		t.Errorf("escalation blocks mention %d users, want bob alone: %s", got, blocks)
	}
	for _, other := range []string{alice, carol, agentUser, "U0EVIL>"} {
		if strings.Contains(text, "<@"+other) || strings.Contains(blocks, `"user_id":"`+other+`"`) {
			t.Errorf("escalation mentions %s", other)
		}
	}
}
