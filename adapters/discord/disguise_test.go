package discord

import (
	"strings"
	"testing"

	"github.com/signoff/signoff/bot"
)

// TestDisguisedActionCardIsEscaped: ESC sequences and bidi overrides in an
// action or reason reach the Discord message as visible escapes; the risk
// leads the headline and the fields.
func TestDisguisedActionCardIsEscaped(t *testing.T) {
	r := &bot.Request{ID: "abcdefghijklmnop", Persona: "demo", Level: bot.Dangerous, Reasons: []string{"recursive delete"},
		Action: "rm -rf ~/work # \x1b[27Dsafe \x1b[K \x1b[7C ls -la", Reason: "tidy \u202eup"}
	head := content(r, bot.HowToAnswer)
	e := embed(r)
	all := head + e.Description
	for _, f := range e.Fields {
		all += f.Value
	}
	if strings.ContainsAny(all, "\x1b\u202e") {
		t.Fatalf("message keeps ESC or a bidi override: %q", all)
	}
	if !strings.Contains(e.Description, `\x1b[27Dsafe`) || !strings.HasPrefix(head, "⛔ approval needed (dangerous)") || e.Fields[0].Name != "Risk" {
		t.Fatalf("content %q, description %q, first field %q: want escapes shown, the risk first", head, e.Description, e.Fields[0].Name)
	}
}
