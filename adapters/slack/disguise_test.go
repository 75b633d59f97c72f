package slack

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDisguisedActionCardIsEscaped: an action holding ESC sequences and a
// bidi override reaches the card as visible escapes, after the risk.
func TestDisguisedActionCardIsEscaped(t *testing.T) {
	r := sampleRequest()
	r.Action = "rm -rf ~/work # \x1b[27Dsafe \x1b[K \x1b[7C ls -la"
	r.Reason = "tidy \u202eup"
	raw, err := json.Marshal(requestCard(r))
	if err != nil {
		t.Fatal(err)
	}
	var decoded any
	json.Unmarshal(raw, &decoded)
	text, _ := json.Marshal(decoded) // re-encode so \u001b in JSON shows as what a client renders
	s := string(raw)
	if strings.Contains(s, `\u001b`) || strings.Contains(s, "\u202e") || strings.Contains(string(text), `\u001b`) {
		t.Fatalf("card keeps ESC or a bidi override:\n%s", raw)
	}
	if !strings.Contains(s, `\\x1b[27Dsafe`) || strings.Index(s, "Risk: ") > strings.Index(s, "rm -rf") {
		t.Fatalf("card does not show the escapes as text after the risk:\n%s", raw)
	}
	if fb := requestText(r); strings.ContainsAny(fb, "\x1b\u202e") {
		t.Fatalf("fallback text %q keeps controls", fb)
	}
}
