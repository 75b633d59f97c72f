package signing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/signoff/signoff/bot"
)

var _ bot.Notary = (*Key)(nil)

// SealReceipt signs rc as a Nostr event of kind bot.KindReceipt: the
// receipt as JSON content, the request id and status also as tags.
func (k *Key) SealReceipt(rc bot.Receipt, at time.Time) (json.RawMessage, error) {
	content, err := json.Marshal(rc)
	if err != nil {
		return nil, err
	}
	raw, _, err := k.SignEvent(bot.KindReceipt, string(content),
		[][]string{{"signoff", rc.RequestID}, {"status", string(rc.Status)}, {"digest", rc.ActionDigest}}, at)
	return raw, err
}

// OpenReceipt verifies a receipt this key signed.
func (k *Key) OpenReceipt(raw []byte) (bot.Receipt, error) { return VerifyReceipt(raw, k.public) }

// ErrUnpinned: no gateway key is pinned, so no receipt can be believed.
var ErrUnpinned = errors.New("no gateway key is pinned, so no approval can be believed " +
	"(set SIGNOFF_GATEWAY_KEY to the gateway's npub, or write it to the pin file; see docs/trust-boundary.md)")

// VerifyReceipt checks raw as a receipt signed by the gateway key pin (hex
// or npub) and returns what it says.
func VerifyReceipt(raw []byte, pin string) (bot.Receipt, error) {
	var rc bot.Receipt
	if pin == "" {
		return rc, ErrUnpinned
	}
	want, err := ParsePublicKey(pin)
	if err != nil {
		return rc, fmt.Errorf("pinned gateway key: %w", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return rc, errors.New("the gateway's answer carries no signed receipt")
	}
	ev, err := VerifyEvent(raw)
	if err != nil {
		return rc, fmt.Errorf("receipt: %s", bot.ErrorMessage(err))
	}
	if ev.Kind != bot.KindReceipt {
		return rc, fmt.Errorf("receipt is a kind %d event, not %d", ev.Kind, bot.KindReceipt)
	}
	if ev.PubKey != want {
		return rc, fmt.Errorf("receipt is signed by %s, not the pinned gateway key %s", npub(ev.PubKey), npub(want))
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(ev.Content)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rc); err != nil {
		return bot.Receipt{}, fmt.Errorf("receipt content is not a receipt: %v", err)
	}
	if tagValue(ev.Tags, "signoff") != rc.RequestID || tagValue(ev.Tags, "status") != string(rc.Status) {
		return bot.Receipt{}, errors.New("receipt tags disagree with its content")
	}
	return rc, nil
}

// CheckApproval is what a client does before it acts on an approval: r must
// carry a receipt signed by the pinned gateway key saying approved, for this
// request id, for exactly the action asked (kind and text), with the nonce
// sent, for the persona asked (when one was named). Any failure means not
// approved. The hook, exec, request, the MCP server and /v1/check clients
// call it.
func CheckApproval(pin string, asked bot.NewRequest, r *bot.Request) error {
	if r == nil {
		return errors.New("no request in the gateway's answer")
	}
	rc, err := VerifyReceipt(r.Receipt, pin)
	if err != nil {
		return err
	}
	switch {
	case rc.RequestID != r.ID:
		return fmt.Errorf("receipt is for request %q, not %q", rc.RequestID, r.ID)
	case rc.Status != bot.Approved:
		return fmt.Errorf("receipt says %s, not approved", rc.Status)
	case rc.ActionDigest != bot.ActionDigest(asked.Kind, asked.Action):
		return errors.New("receipt is for another action than the one asked")
	case asked.Nonce == "" || rc.Nonce != asked.Nonce:
		return errors.New("receipt is not for this ask (its nonce differs): an earlier approval cannot be replayed")
	case asked.Persona != "" && rc.Persona != asked.Persona:
		return fmt.Errorf("receipt is for persona %q, not %q", rc.Persona, asked.Persona)
	case r.Status != bot.Approved:
		return fmt.Errorf("the gateway says %s while its receipt says approved", r.Status)
	}
	return nil
}

func tagValue(tags nostr.Tags, name string) string {
	for _, t := range tags {
		if len(t) >= 2 && t[0] == name {
			return t[1]
		}
	}
	return ""
}

func npub(hex string) string {
	if k, err := ParsePublicKey(hex); err == nil {
		if s, err := encodeNpub(k); err == nil {
			return s
		}
	}
	return hex
}

func encodeNpub(hex string) (string, error) { return nip19.EncodePublicKey(hex) }

// VerifyRequestEvent checks, before a person's reaction is signed, that r's
// Nostr event is the gateway's (signed by the pinned key), names this
// request, and carries the digest of the very action r shows. A server
// showing one action while naming the event of another (a confused deputy)
// is refused. It returns the verified event: react to its id.
func VerifyRequestEvent(r *bot.Request, pin string) (*nostr.Event, error) {
	if pin == "" {
		return nil, ErrUnpinned
	}
	want, err := ParsePublicKey(pin)
	if err != nil {
		return nil, fmt.Errorf("pinned gateway key: %w", err)
	}
	if len(r.Event) == 0 {
		return nil, fmt.Errorf("request %s carries no signed event", r.ID)
	}
	ev, err := VerifyEvent(r.Event)
	if err != nil {
		return nil, fmt.Errorf("request %s's event: %s", r.ID, bot.ErrorMessage(err))
	}
	switch {
	case ev.PubKey != want:
		return nil, fmt.Errorf("request %s's event is signed by %s, not the pinned gateway key %s", r.ID, npub(ev.PubKey), npub(want))
	case ev.ID != r.EventID:
		return nil, fmt.Errorf("request %s names event %s but carries event %s", r.ID, r.EventID, ev.ID)
	case tagValue(ev.Tags, "signoff") != r.ID:
		return nil, fmt.Errorf("request %s's event is for request %q", r.ID, tagValue(ev.Tags, "signoff"))
	case tagValue(ev.Tags, "digest") != bot.ActionDigest(r.Kind, r.Action):
		return nil, fmt.Errorf("request %s shows an action that its signed event does not carry", r.ID)
	}
	return ev, nil
}
