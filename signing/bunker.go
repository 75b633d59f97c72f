package signing

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
)

// A bunker:// URL (NIP-46) names a remote signer — a person's phone or a
// signing service — that holds their key: the signer's public key, the
// relays it listens on and an optional one-time secret.
//
//	bunker://<64 hex>?relay=wss://relay.example&relay=…&secret=…
type BunkerURL struct {
	Signer string   // the remote signer's public key, lowercase hex
	Relays []string // ws:// or wss://, normalized as go-nostr does
	Secret string   // "" when the URL has none
}

// Limits on what a pasted URL may carry; a real one is far smaller.
const (
	maxBunkerURL    = 4096
	maxBunkerRelays = 10
	maxBunkerSecret = 256
)

// ParseBunkerURL reads a bunker:// URL. It never looks anything up: a
// NIP-05 name (alice@example.com), which go-nostr's ConnectBunker would
// resolve over HTTPS, is refused here.
func ParseBunkerURL(s string) (*BunkerURL, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty bunker URL: paste the bunker://… your signer app shows")
	}
	if len(s) > maxBunkerURL {
		return nil, fmt.Errorf("bunker URL is longer than %d bytes", maxBunkerURL)
	}
	if !strings.HasPrefix(strings.ToLower(s), "bunker://") {
		if !strings.Contains(s, "://") && strings.Contains(s, "@") {
			return nil, errors.New("a NIP-05 name is not a bunker URL: paste the bunker://… your signer app shows")
		}
		return nil, errors.New("a bunker URL starts with bunker://")
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("bunker URL does not parse: %v", cleanURLError(err))
	}
	switch {
	case u.User != nil:
		return nil, errors.New("bunker URL must not carry a user name or password")
	case u.Port() != "":
		return nil, errors.New("bunker URL: the part after bunker:// is the signer's public key, not a host:port")
	case u.Path != "" && u.Path != "/":
		return nil, errors.New("bunker URL has a path after the signer's public key")
	case u.Fragment != "" || strings.Contains(s, "#"):
		return nil, errors.New("bunker URL must not have a #fragment")
	}
	signer, err := parseSignerKey(u.Host)
	if err != nil {
		return nil, err
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("bunker URL query does not parse: %v", cleanURLError(err))
	}
	b := &BunkerURL{Signer: signer}
	raw := q["relay"]
	if len(raw) == 0 {
		return nil, errors.New("bunker URL names no relay (relay=wss://…): the signer cannot be reached")
	}
	if len(raw) > maxBunkerRelays {
		return nil, fmt.Errorf("bunker URL names %d relays, at most %d", len(raw), maxBunkerRelays)
	}
	for _, r := range raw {
		n, err := parseBunkerRelay(r)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(b.Relays, n) {
			b.Relays = append(b.Relays, n)
		}
	}
	if secrets := q["secret"]; len(secrets) > 1 {
		return nil, errors.New("bunker URL has more than one secret")
	} else if len(secrets) == 1 {
		sec := secrets[0]
		if sec == "" || len(sec) > maxBunkerSecret || !printable(sec) {
			return nil, fmt.Errorf("bunker URL secret must be 1 to %d printable characters", maxBunkerSecret)
		}
		b.Secret = sec
	}
	return b, nil
}

func parseSignerKey(host string) (string, error) {
	if strings.HasPrefix(strings.ToLower(host), "npub1") {
		pk, err := ParsePublicKey(strings.ToLower(host))
		if err != nil {
			return "", fmt.Errorf("bunker URL: the signer's key %s", err)
		}
		host = pk
	}
	host = strings.ToLower(host)
	if len(host) != 64 || !isLowerHex(host) {
		return "", errors.New("bunker URL: after bunker:// comes the signer's public key, 64 hex characters")
	}
	if !nostr.IsValidPublicKey(host) {
		return "", errors.New("bunker URL: the signer's public key is not a point on the curve")
	}
	return host, nil
}

func parseBunkerRelay(r string) (string, error) {
	shown := r
	if len(shown) > 80 || !printable(shown) {
		shown = "(unprintable or long)"
	}
	u, err := url.Parse(r)
	if err != nil {
		return "", fmt.Errorf("bunker URL relay %q does not parse: %v", shown, cleanURLError(err))
	}
	switch {
	case u.Scheme != "ws" && u.Scheme != "wss":
		return "", fmt.Errorf("bunker URL relay %q: a relay is ws:// or wss://", shown)
	case u.Hostname() == "":
		return "", fmt.Errorf("bunker URL relay %q has no host", shown)
	case u.User != nil:
		return "", fmt.Errorf("bunker URL relay %q must not carry a user name or password", shown)
	case u.Fragment != "" || u.RawQuery != "" || u.ForceQuery:
		return "", fmt.Errorf("bunker URL relay %q must not have a query or #fragment", shown)
	case !printable(r) || strings.ContainsAny(r, " \\"):
		return "", fmt.Errorf("bunker URL relay %q has characters a URL does not", shown)
	}
	n := nostr.NormalizeURL(r)
	if n == "" {
		return "", fmt.Errorf("bunker URL relay %q does not parse", shown)
	}
	return n, nil
}

// cleanURLError drops the input net/url quotes back, which may be long or
// unprintable; the message says what is wrong.
func cleanURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// String is the URL again, in canonical form; it carries the secret.
func (b *BunkerURL) String() string {
	q := url.Values{"relay": b.Relays}
	if b.Secret != "" {
		q.Set("secret", b.Secret)
	}
	return "bunker://" + b.Signer + "?" + q.Encode()
}

// Redacted is the URL without its secret, for messages.
func (b *BunkerURL) Redacted() string {
	return "bunker://" + b.Signer + "?" + url.Values{"relay": b.Relays}.Encode()
}

// UnsignedReaction is the NIP-25 reaction NewReactionWithReason signs —
// the same kind, content and tags — left unsigned, for a remote signer.
func UnsignedReaction(eventID, author string, c bot.Choice, reason string, at time.Time) (nostr.Event, error) {
	if len(reason) > MaxVoteReason || !utf8.ValidString(reason) {
		return nostr.Event{}, bot.Errorf(bot.EInvalid, "a reason is at most %d bytes of UTF-8", MaxVoteReason)
	}
	content := map[bot.Choice]string{bot.Approve: "✅", bot.Deny: "❌", bot.Always: "♾️"}[c]
	if content == "" {
		return nostr.Event{}, bot.Errorf(bot.EInvalid, "a reaction approves or denies")
	}
	tags := nostr.Tags{{"e", eventID}, {"p", author}, {"k", "1"}}
	if reason != "" {
		tags = append(nostr.Tags{{ReasonTag, reason}}, tags...)
	}
	return nostr.Event{Kind: nostr.KindReaction, CreatedAt: nostr.Timestamp(at.Unix()), Content: content, Tags: tags}, nil
}

// ErrNotAsked is wrapped by CheckSignedAsAsked when a remote signer sends
// back an event other than the one it was asked to sign.
var ErrNotAsked = errors.New("the signer returned an event other than the one asked")

// CheckSignedAsAsked verifies what a remote signer returned for asked: a
// valid NIP-01 event (id and signature) by pubkey, with exactly the kind,
// created_at, content and tags asked. It returns the event as JSON to
// send on. A signer (or a relay between) that signs something else — a
// ✅ for a ❌, a reaction naming another request — is refused.
func CheckSignedAsAsked(asked nostr.Event, pubkey string, raw []byte) (json.RawMessage, error) {
	got, err := VerifyEvent(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotAsked, err)
	}
	switch {
	case got.PubKey != pubkey:
		return nil, fmt.Errorf("%w: signed by %s, not by the key it said it holds (%s)", ErrNotAsked, short(got.PubKey), short(pubkey))
	case got.Kind != asked.Kind:
		return nil, fmt.Errorf("%w: kind %d, asked %d", ErrNotAsked, got.Kind, asked.Kind)
	case got.Content != asked.Content:
		return nil, fmt.Errorf("%w: content %s, asked %s", ErrNotAsked, clip(got.Content), clip(asked.Content))
	case got.CreatedAt != asked.CreatedAt:
		return nil, fmt.Errorf("%w: created_at %d, asked %d", ErrNotAsked, got.CreatedAt, asked.CreatedAt)
	case !slices.EqualFunc(got.Tags, asked.Tags, func(a, b nostr.Tag) bool { return slices.Equal(a, b) }):
		return nil, fmt.Errorf("%w: its tags differ from those asked (%s)", ErrNotAsked, tagDiff(asked.Tags, got.Tags))
	}
	return json.Marshal(got)
}

func tagDiff(asked, got nostr.Tags) string {
	for i := range max(len(asked), len(got)) {
		if i >= len(asked) {
			return fmt.Sprintf("an extra tag %s", clip(fmt.Sprint([]string(got[i]))))
		}
		if i >= len(got) {
			return fmt.Sprintf("tag %s missing", clip(fmt.Sprint([]string(asked[i]))))
		}
		if !slices.Equal(asked[i], got[i]) {
			return fmt.Sprintf("%s instead of %s", clip(fmt.Sprint([]string(got[i]))), clip(fmt.Sprint([]string(asked[i]))))
		}
	}
	return "?"
}

func short(hex string) string {
	if len(hex) > 12 {
		return hex[:12] + "…"
	}
	return hex
}

// clip keeps a signer's text short and printable in an error message.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) > 80 {
		s = string([]rune(s)[:80]) + "…"
	}
	return bot.Escape(s)
}
