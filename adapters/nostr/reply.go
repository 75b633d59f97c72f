package nostr

import (
	"context"
	"strings"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// reply is a verified kind-1 note answering a request's event: "❌ use the
// staging bucket" is a deny with that reason, a note with no answer first
// is a remark.
type reply struct {
	Event  *gonostr.Event
	Target string // the replied-to event id (NIP-10)
	Choice bot.Choice
	Reason string
}

// parseReply verifies raw exactly as a reaction is verified (id recomputed,
// BIP-340 signature, the replay window around now) and says which event it
// replies to and what it answers. The relay is not trusted for any of it.
func parseReply(raw []byte, now time.Time) (*reply, error) {
	ev, err := signing.VerifyEvent(raw)
	if err != nil {
		return nil, err
	}
	if ev.Kind != gonostr.KindTextNote {
		return nil, bot.Errorf(bot.EInvalid, "event kind %d is not a reply (kind 1)", ev.Kind)
	}
	at := ev.CreatedAt.Time()
	if at.Before(now.Add(-signing.MaxEventAge)) {
		return nil, bot.Errorf(bot.EStale, "reply created_at %s is older than %s", at.UTC().Format(time.RFC3339), signing.MaxEventAge)
	}
	if at.After(now.Add(signing.MaxEventSkew)) {
		return nil, bot.Errorf(bot.EStale, "reply created_at %s is in the future", at.UTC().Format(time.RFC3339))
	}
	target := replyTarget(ev.Tags)
	if len(target) != 64 || !isHexID(target) {
		return nil, bot.Errorf(bot.EInvalid, "reply has no e tag naming an event id")
	}
	c, reason := bot.ParseReply(ev.Content)
	return &reply{Event: ev, Target: strings.ToLower(target), Choice: c, Reason: signing.ClipReason(reason)}, nil
}

// replyTarget is the event a NIP-10 reply answers: the e tag marked
// "reply"; else the one marked "root" (a direct reply to the root); else,
// in the deprecated positional form, the last unmarked e tag. A reply
// deeper in a thread whose root is a request names another event, and so
// is not an answer to the request.
func replyTarget(tags gonostr.Tags) string {
	var root, last string
	for _, t := range tags {
		if len(t) < 2 || t[0] != "e" {
			continue
		}
		marker := ""
		if len(t) >= 4 {
			marker = t[3]
		}
		switch marker {
		case "reply":
			return t[1]
		case "root":
			root = t[1]
		case "":
			last = t[1]
		}
	}
	if root != "" {
		return root
	}
	return last
}

func isHexID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Ballot turns the reply into a signed ballot for the request whose event
// it answers; the voter's own signature over the note is the proof.
func (r *reply) Ballot(raw []byte) bot.Ballot {
	return bot.Ballot{
		Ref:      bot.MessageRef{Platform: bot.Nostr, ID: r.Target},
		Voter:    bot.Identity{Platform: bot.Nostr, ID: r.Event.PubKey},
		Choice:   r.Choice,
		Proof:    bot.ProofSigned,
		DedupKey: "nostr:" + r.Event.ID,
		Evidence: raw,
		Reason:   r.Reason,
	}
}

// handleReply verifies a kind-1 note a relay delivered and, when it
// answers one of the watched request events, casts it: an answer first
// ("❌ use the staging bucket", "deny: …") is a vote with its reason, any
// other reply a remark (recorded and ignored by the gateway). The
// gateway's own notes (outcome replies) and notes answering some other
// event in the thread are not ballots.
func (a *Adapter) handleReply(ctx context.Context, relay string, raw []byte, peekID string) {
	rp, err := parseReply(raw, a.cfg.Now())
	if err != nil {
		a.log.Warn("nostr: reply dropped", "relay", relay, "event", peekID, "err", err)
		return
	}
	if rp.Event.PubKey == a.cfg.Key.PublicKey() {
		return
	}
	a.mu.Lock()
	rid, ok := a.watched[rp.Target]
	a.mu.Unlock()
	if !ok {
		a.log.Debug("nostr: reply to another event ignored", "relay", relay, "event", rp.Event.ID, "target", rp.Target)
		return
	}
	if !a.claim(rp.Event.ID) {
		a.log.Debug("nostr: duplicate reply skipped", "relay", relay, "event", rp.Event.ID)
		return
	}
	b := rp.Ballot(raw)
	b.RequestID = rid
	a.cast(ctx, relay, "reply", b, rp.Event.ID, rp.Event.PubKey)
}
