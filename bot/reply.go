package bot

import (
	"strings"
	"unicode"
)

// ParseReply reads a person's reply to a request (in its Slack or Discord
// thread, or a Nostr reply): a leading answer — ✅, ❌, or the word approve
// or deny — then what they say, which is recorded as the vote's reason:
// "❌ use the staging bucket", "deny: not on a Friday". A reply that does
// not start with an answer is a remark: Other, the whole text as reason.
// Stricter than ParseChoice: "x marks the spot" and "- see below" are remarks.
func ParseReply(text string) (Choice, string) {
	text = strings.TrimSpace(text)
	word, rest := text, ""
	if i := strings.IndexFunc(text, func(r rune) bool { return unicode.IsSpace(r) || r == ':' || r == ',' }); i >= 0 {
		word, rest = text[:i], text[i:]
	}
	c := Other
	switch strings.ToLower(strings.ReplaceAll(word, "\ufe0f", "")) {
	case "✅", "✔", "☑", "approve", "approved":
		c = Approve
	case "❌", "✖", "❎", "deny", "denied":
		c = Deny
	}
	if c == Other {
		return Other, text
	}
	return c, strings.TrimLeftFunc(rest, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(":,-—–", r)
	})
}
