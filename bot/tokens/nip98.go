package tokens

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// A person proves an admin call with their key (NIP-98 HTTP auth): a
// kind 27235 event tagged with the call's absolute URL ("u"), its method
// and the sha256 of its body ("payload"), signed moments before, sent as
// "Authorization: Nostr <base64 of the event JSON>". It is checked like a
// vote: the signature, then that it says exactly this call, now.

// KindHTTPAuth is NIP-98's event kind.
const KindHTTPAuth = 27235

// HTTPAuthWindow is how far created_at may be from now either way.
const HTTPAuthWindow = 60 * time.Second

// maxHTTPAuth caps the header's length (an event with three short tags
// is well under 2 KiB).
const maxHTTPAuth = 8 << 10

// Call is what a NIP-98 event must say: the request as the gateway got it.
type Call struct {
	Method string
	URL    string // absolute: scheme://host/path?query
	Body   []byte
}

// PersonProof is a verified NIP-98 event: who signed it and the event,
// kept as evidence in the audit record of what it did.
type PersonProof struct {
	PubKey string          // hex
	Event  json.RawMessage // as sent
}

// IsHTTPAuth reports whether an Authorization header carries NIP-98.
func IsHTTPAuth(header string) bool {
	scheme, _, _ := strings.Cut(header, " ")
	return strings.EqualFold(scheme, "Nostr")
}

func authErr(format string, args ...any) error {
	return bot.Errorf(bot.EUnauthorized, "NIP-98 authorization: "+format, args...)
}

// ParseHTTPAuth reads an "Authorization: Nostr <base64>" header and checks
// the event it carries against call at now: a valid signature, kind 27235,
// u equal to the call's URL, its method, the sha256 of its body (required
// when there is a body), created_at within HTTPAuthWindow. Whether the
// signer may do what it asks is the caller's to decide (Service.Person).
func ParseHTTPAuth(header string, call Call, now time.Time) (*PersonProof, error) {
	if len(header) > maxHTTPAuth {
		return nil, authErr("the header is longer than %d bytes", maxHTTPAuth)
	}
	scheme, b64, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Nostr") {
		return nil, authErr(`the Authorization header must be "Nostr <base64 event>"`)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(strings.TrimSpace(b64)); err != nil {
			return nil, authErr("the event is not base64")
		}
	}
	ev, err := signing.VerifyEvent(raw)
	if err != nil {
		return nil, authErr("%s", bot.ErrorMessage(err))
	}
	if ev.Kind != KindHTTPAuth {
		return nil, authErr("the event is kind %d, not %d", ev.Kind, KindHTTPAuth)
	}
	at := time.Unix(int64(ev.CreatedAt), 0)
	if d := now.Sub(at); d > HTTPAuthWindow || d < -HTTPAuthWindow {
		return nil, authErr("the event was signed at %s, more than %s from now (%s): sign it again", at.UTC().Format(time.RFC3339), HTTPAuthWindow, now.UTC().Format(time.RFC3339))
	}
	u, err := oneTag(ev, "u")
	if err != nil {
		return nil, err
	}
	if !sameURL(u, call.URL) {
		return nil, authErr("the event is for %q, not this call's URL %q", u, call.URL)
	}
	m, err := oneTag(ev, "method")
	if err != nil {
		return nil, err
	}
	if m != call.Method {
		return nil, authErr("the event is for method %q, not %s", m, call.Method)
	}
	sum := sha256.Sum256(call.Body)
	want := hex.EncodeToString(sum[:])
	switch p, err := oneTag(ev, "payload"); {
	case err != nil && len(call.Body) > 0:
		return nil, authErr("the call has a body, so the event needs a payload tag (its sha256)")
	case err == nil && !strings.EqualFold(p, want):
		return nil, authErr("the event's payload hash does not match the body sent")
	}
	return &PersonProof{PubKey: ev.PubKey, Event: json.RawMessage(raw)}, nil
}

// oneTag is the value of ev's only tag called name.
func oneTag(ev *nostr.Event, name string) (string, error) {
	var out []string
	for _, t := range ev.Tags {
		if len(t) >= 1 && t[0] == name {
			if len(t) < 2 {
				return "", authErr("the %s tag has no value", name)
			}
			out = append(out, t[1])
		}
	}
	switch len(out) {
	case 0:
		return "", authErr("the event has no %s tag", name)
	case 1:
		return out[0], nil
	}
	return "", authErr("the event has %d %s tags, want one", len(out), name)
}

// sameURL compares a signed URL with the call's: scheme http or https,
// the same host (case-insensitively) and the same path and query, byte
// for byte.
func sameURL(signed, call string) bool {
	a, err := url.Parse(signed)
	if err != nil || (a.Scheme != "http" && a.Scheme != "https") || a.User != nil || a.Fragment != "" {
		return false
	}
	b, err := url.Parse(call)
	if err != nil {
		return false
	}
	return strings.EqualFold(a.Host, b.Host) && a.EscapedPath() == b.EscapedPath() && a.RawQuery == b.RawQuery
}

// HTTPAuthEvent is the unsigned NIP-98 event for call (for a person's
// key or signer to sign). A nonce tag makes two identical calls in one
// second two events: the gateway refuses an event it has seen.
func HTTPAuthEvent(call Call, at time.Time) nostr.Event {
	tags := nostr.Tags{{"u", call.URL}, {"method", call.Method}}
	if len(call.Body) > 0 {
		sum := sha256.Sum256(call.Body)
		tags = append(tags, nostr.Tag{"payload", hex.EncodeToString(sum[:])})
	}
	nonce := make([]byte, 8)
	rand.Read(nonce)
	tags = append(tags, nostr.Tag{"nonce", hex.EncodeToString(nonce)})
	return nostr.Event{Kind: KindHTTPAuth, CreatedAt: nostr.Timestamp(at.Unix()), Tags: tags}
}

// HTTPAuthHeader is the Authorization header carrying a signed event.
func HTTPAuthHeader(signed []byte) string {
	return "Nostr " + base64.StdEncoding.EncodeToString(signed)
}

func encodeNpub(hex string) (string, error) { return nip19.EncodePublicKey(hex) }
