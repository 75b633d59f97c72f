package signing

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
)

// MaxVoteReason caps what a voter may say with a vote, in bytes.
const MaxVoteReason = 1000

// ReasonTag names the tag a reaction carries its voter's reason in:
// ["reason", "use the staging bucket"]. The voter signs it with the vote.
const ReasonTag = "reason"

// NewReactionWithReason is NewReaction carrying the voter's reason.
func NewReactionWithReason(k *Key, eventID, author string, c bot.Choice, reason string, at time.Time) (json.RawMessage, error) {
	if reason == "" {
		return NewReaction(k, eventID, author, c, at)
	}
	if len(reason) > MaxVoteReason || !utf8.ValidString(reason) {
		return nil, bot.Errorf(bot.EInvalid, "a reason is at most %d bytes of UTF-8", MaxVoteReason)
	}
	content := map[bot.Choice]string{bot.Approve: "✅", bot.Deny: "❌", bot.Always: "♾️"}[c]
	if content == "" {
		return nil, bot.Errorf(bot.EInvalid, "a reaction approves or denies")
	}
	ev := nostr.Event{
		Kind: nostr.KindReaction, CreatedAt: nostr.Timestamp(at.Unix()), Content: content,
		Tags: nostr.Tags{{ReasonTag, reason}, {"e", eventID}, {"p", author}, {"k", "1"}},
	}
	if err := k.Sign(&ev); err != nil {
		return nil, fmt.Errorf("sign reaction: %w", err)
	}
	return json.Marshal(ev)
}

// Reason is what the voter said with the reaction (its reason tag), as
// valid UTF-8 cut at MaxVoteReason bytes; "" when none.
func (r *Reaction) Reason() string {
	for _, t := range r.Event.Tags {
		if len(t) >= 2 && t[0] == ReasonTag {
			return ClipReason(t[1])
		}
	}
	return ""
}

// ClipReason makes outside text a vote reason: valid UTF-8, trimmed, at
// most MaxVoteReason bytes (cut on a rune boundary).
func ClipReason(s string) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) <= MaxVoteReason {
		return s
	}
	cut := MaxVoteReason
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
