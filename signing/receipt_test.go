package signing

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
)

func approvedFor(t *testing.T, k *Key, n bot.NewRequest, id string) *bot.Request {
	t.Helper()
	now := time.Now().UTC()
	raw, err := k.SealReceipt(bot.Receipt{RequestID: id, Persona: n.Persona, Kind: n.Kind,
		ActionDigest: bot.ActionDigest(n.Kind, n.Action), Nonce: n.Nonce, Status: bot.Approved,
		DecidedBy: []string{"alice"}, DecidedAt: now}, now)
	if err != nil {
		t.Fatal(err)
	}
	return &bot.Request{ID: id, Persona: n.Persona, Kind: n.Kind, Action: n.Action, Status: bot.Approved, Receipt: raw}
}

func TestCheckApproval(t *testing.T) {
	gw := NewKey()
	asked := bot.NewRequest{Persona: "prod", Kind: bot.KindCommand, Action: "rm -rf /srv/data", Nonce: bot.NewNonce()}
	good := approvedFor(t, gw, asked, "req1")
	if err := CheckApproval(gw.Npub(), asked, good); err != nil {
		t.Fatalf("a receipt for exactly what was asked: %v", err)
	}
	other := func(f func(*bot.NewRequest)) bot.NewRequest { n := asked; f(&n); return n }
	for _, tc := range []struct {
		name string
		pin  string
		r    *bot.Request
		want string
	}{
		{"unpinned", "", good, "no gateway key is pinned"},
		{"no receipt", gw.Npub(), &bot.Request{ID: "req1", Status: bot.Approved}, "no signed receipt"},
		{"another key", gw.Npub(), approvedFor(t, NewKey(), asked, "req1"), "not the pinned gateway key"},
		{"another request", gw.Npub(), func() *bot.Request { r := approvedFor(t, gw, asked, "req2"); r.ID = "req1"; return r }(), "for request"},
		{"another action", gw.Npub(), approvedFor(t, gw, other(func(n *bot.NewRequest) { n.Action = "ls" }), "req1"), "another action"},
		{"another kind", gw.Npub(), approvedFor(t, gw, other(func(n *bot.NewRequest) { n.Kind = bot.KindText }), "req1"), "another action"},
		{"replayed (another nonce)", gw.Npub(), approvedFor(t, gw, other(func(n *bot.NewRequest) { n.Nonce = bot.NewNonce() }), "req1"), "nonce"},
		{"another persona", gw.Npub(), approvedFor(t, gw, other(func(n *bot.NewRequest) { n.Persona = "yolo" }), "req1"), "persona"},
		{"tampered content", gw.Npub(), func() *bot.Request {
			r := approvedFor(t, gw, asked, "req1")
			r.Receipt = json.RawMessage(strings.Replace(string(r.Receipt), "alice", "mallo", 1))
			return r
		}(), "does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckApproval(tc.pin, asked, tc.r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckApproval = %v, want an error with %q", err, tc.want)
			}
		})
	}
	denied := func() *bot.Request {
		now := time.Now()
		raw, _ := gw.SealReceipt(bot.Receipt{RequestID: "req1", Persona: "prod", Kind: asked.Kind,
			ActionDigest: bot.ActionDigest(asked.Kind, asked.Action), Nonce: asked.Nonce, Status: bot.Denied, DecidedAt: now}, now)
		return &bot.Request{ID: "req1", Status: bot.Approved, Receipt: raw}
	}()
	if err := CheckApproval(gw.Npub(), asked, denied); err == nil || !strings.Contains(err.Error(), "not approved") {
		t.Fatalf("a denial's receipt under an approved status = %v, want refused", err)
	}
}

func TestVerifyReceiptRefusesOtherKinds(t *testing.T) {
	gw := NewKey()
	raw, _, _ := gw.SignEvent(nostr.KindTextNote, `{"request_id":"req1","status":"approved"}`, [][]string{{"signoff", "req1"}, {"status", "approved"}}, time.Now())
	if _, err := VerifyReceipt(raw, gw.PublicKey()); err == nil || !strings.Contains(err.Error(), "kind") {
		t.Fatalf("a kind-1 note as receipt = %v, want refused", err)
	}
}

func TestResolvePin(t *testing.T) {
	gw, other := NewKey(), NewKey()
	dir := t.TempDir()
	pub := filepath.Join(dir, "gateway.pub")
	if err := WritePinFile(pub, gw); err != nil {
		t.Fatal(err)
	}
	file, err := ReadPinSource(pub, false)
	if err != nil {
		t.Fatal(err)
	}
	missing, _ := ReadPinSource(filepath.Join(dir, "none"), false)
	secret := filepath.Join(dir, "gateway.key")
	WriteKey(secret, gw)
	sec, _ := ReadPinSource(secret, true)

	if p, err := ResolvePin(PinSource{Name: "env"}, missing, file); err != nil || p.Key != gw.PublicKey() {
		t.Fatalf("pin from the file = %v %v", p, err)
	}
	if p, err := ResolvePin(PinSource{Name: "env", Value: gw.Npub()}, file, sec); err != nil || p.Key != gw.PublicKey() || len(p.From) != 3 {
		t.Fatalf("three agreeing pins = %v %v", p, err)
	}
	if _, err := ResolvePin(PinSource{Name: "SIGNOFF_GATEWAY_KEY", Value: other.Npub()}, file); err == nil || !strings.Contains(err.Error(), "disagree") {
		t.Fatalf("the environment naming another key than the pin file = %v, want refused", err)
	}
	if _, err := ResolvePin(missing); err != ErrUnpinned {
		t.Fatalf("no pin = %v, want ErrUnpinned", err)
	}
	if _, err := ResolvePin(PinSource{Name: "env", Value: "npub1nonsense"}); err == nil {
		t.Fatal("a malformed pin was accepted")
	}
	os.Remove(pub)
}

// FuzzVerifyReceipt: whatever a server sends as a receipt, VerifyReceipt
// never panics and accepts only what the pinned key signed.
func FuzzVerifyReceipt(f *testing.F) {
	gw := NewKey()
	now := time.Unix(1700000000, 0)
	good, _ := gw.SealReceipt(bot.Receipt{RequestID: "req1", Status: bot.Approved, DecidedAt: now}, now)
	f.Add([]byte(good))
	f.Add([]byte(`{"status":"approved"}`))
	f.Add([]byte(`{"id":"00","pubkey":"00","sig":"00","kind":29207}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, raw []byte) {
		rc, err := VerifyReceipt(raw, gw.PublicKey())
		if err != nil {
			return
		}
		ev, verr := VerifyEvent(raw)
		if verr != nil || ev.PubKey != gw.PublicKey() || ev.Kind != bot.KindReceipt || rc.RequestID != tagValue(ev.Tags, "signoff") {
			t.Fatalf("accepted %q", raw)
		}
	})
}
