package signing

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
)

// Replay window for reactions: a created_at older than MaxEventAge or
// further ahead than MaxEventSkew is refused as stale.
const (
	MaxEventAge  = 10 * time.Minute
	MaxEventSkew = 5 * time.Minute
)

// VerifyEvent parses a Nostr event and checks it per NIP-01: the id is
// recomputed from the serialization, then the BIP-340 signature is checked
// against it. Nothing else is trusted.
func VerifyEvent(raw []byte) (*nostr.Event, error) {
	var ev nostr.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, bot.Errorf(bot.EInvalid, "event is not valid JSON: %v", err)
	}
	// NIP-01 writes all three in lowercase hex. A pubkey in uppercase
	// would verify (its holder signed it so) yet never match the identity
	// a persona lists; the lengths also keep CheckID from indexing past a
	// short id.
	switch {
	case len(ev.ID) != 64 || !isLowerHex(ev.ID):
		return nil, bot.Errorf(bot.EInvalid, "event id must be 64 lowercase hex characters")
	case len(ev.PubKey) != 64 || !isLowerHex(ev.PubKey):
		return nil, bot.Errorf(bot.EInvalid, "event pubkey must be 64 lowercase hex characters")
	case len(ev.Sig) != 128 || !isLowerHex(ev.Sig):
		return nil, bot.Errorf(bot.EInvalid, "event sig must be 128 lowercase hex characters")
	}
	// CheckID compares against the hash of the serialization; go-nostr's
	// CheckSignature alone ignores the id, so both are needed.
	if !ev.CheckID() {
		return nil, bot.Errorf(bot.EUnauthorized, "event id does not match its content")
	}
	// The id is now known to be the hash CheckSignature would recompute
	// (a second serialization); verify against it directly.
	var id, pub [32]byte
	var sig [64]byte
	hex.Decode(id[:], []byte(ev.ID)) // lowercase hex of the right length, checked above
	hex.Decode(pub[:], []byte(ev.PubKey))
	hex.Decode(sig[:], []byte(ev.Sig))
	if !VerifySchnorr(pub[:], id[:], sig[:]) {
		return nil, bot.Errorf(bot.EUnauthorized, "event signature does not verify")
	}
	return &ev, nil
}

// Reaction is a verified NIP-25 reaction to a request's event.
type Reaction struct {
	Event  *nostr.Event
	Target string // the reacted-to event id: the last e tag
	Choice bot.Choice
}

// ParseReaction verifies raw as a kind-7 reaction made within the replay
// window around now and says what it answers.
func ParseReaction(raw []byte, now time.Time) (*Reaction, error) {
	ev, err := VerifyEvent(raw)
	if err != nil {
		return nil, err
	}
	if ev.Kind != nostr.KindReaction {
		return nil, bot.Errorf(bot.EInvalid, "event kind %d is not a reaction (kind 7)", ev.Kind)
	}
	at := ev.CreatedAt.Time()
	if at.Before(now.Add(-MaxEventAge)) {
		return nil, bot.Errorf(bot.EStale, "reaction created_at %s is older than %s", at.UTC().Format(time.RFC3339), MaxEventAge)
	}
	if at.After(now.Add(MaxEventSkew)) {
		return nil, bot.Errorf(bot.EStale, "reaction created_at %s is in the future", at.UTC().Format(time.RFC3339))
	}
	var target string
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "e" {
			target = t[1] // NIP-25: the last e tag is the reacted-to event
		}
	}
	if len(target) != 64 || !isHex(target) {
		return nil, bot.Errorf(bot.EInvalid, "reaction has no e tag naming an event id")
	}
	return &Reaction{Event: ev, Target: strings.ToLower(target), Choice: bot.ParseChoice(ev.Content)}, nil
}

// Ballot turns the reaction into a ballot for the request whose event it
// names. The voter's own signature is the proof.
func (r *Reaction) Ballot(raw []byte) bot.Ballot {
	return bot.Ballot{
		Ref:      bot.MessageRef{Platform: bot.Nostr, ID: r.Target},
		Voter:    bot.Identity{Platform: bot.Nostr, ID: r.Event.PubKey},
		Choice:   r.Choice,
		Proof:    bot.ProofSigned,
		DedupKey: "nostr:" + r.Event.ID,
		Evidence: json.RawMessage(raw),
		Reason:   r.Reason(),
	}
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// NewReaction signs a NIP-25 reaction by k to the event eventID authored by
// author: content ✅ to approve or ❌ to deny, the reacted-to event in the
// (last) e tag, its author in the p tag.
func NewReaction(k *Key, eventID, author string, c bot.Choice, at time.Time) (json.RawMessage, error) {
	content := map[bot.Choice]string{bot.Approve: "✅", bot.Deny: "❌", bot.Always: "♾️"}[c]
	if content == "" {
		return nil, bot.Errorf(bot.EInvalid, "a reaction approves or denies")
	}
	ev := nostr.Event{
		Kind: nostr.KindReaction, CreatedAt: nostr.Timestamp(at.Unix()), Content: content,
		Tags: nostr.Tags{{"e", eventID}, {"p", author}, {"k", "1"}},
	}
	if err := k.Sign(&ev); err != nil {
		return nil, fmt.Errorf("sign reaction: %w", err)
	}
	return json.Marshal(ev)
}
