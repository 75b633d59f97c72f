package signing

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
)

type nostrGolden struct {
	Key struct {
		Secret, Nsec, Pubkey, Npub string
	}
	Reaction       json.RawMessage
	ReactionTarget string `json:"reaction_target"`
	External       []json.RawMessage
	BIP340         []struct {
		Secret, Pubkey, Message, Signature string
	}
}

func loadNostrGolden(t testing.TB) nostrGolden {
	t.Helper()
	b, err := os.ReadFile("testdata/nostr_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g nostrGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestNostrGoldenVectors(t *testing.T) {
	g := loadNostrGolden(t)
	t.Run("key", func(t *testing.T) {
		for _, s := range []string{g.Key.Secret, g.Key.Nsec, strings.ToUpper(g.Key.Secret), " " + g.Key.Nsec + "\n"} {
			k, err := ParseKey(s)
			if err != nil {
				t.Fatalf("ParseKey(%q): %v", s, err)
			}
			if k.PublicKey() != g.Key.Pubkey || k.Npub() != g.Key.Npub || k.Nsec() != g.Key.Nsec {
				t.Errorf("ParseKey(%q) = %s %s, want %s %s", s, k.PublicKey(), k.Npub(), g.Key.Pubkey, g.Key.Npub)
			}
		}
	})
	t.Run("reaction verifies", func(t *testing.T) {
		at := time.Unix(1767225600, 0)
		re, err := ParseReaction(g.Reaction, at.Add(time.Minute))
		if err != nil {
			t.Fatalf("ParseReaction: %v", err)
		}
		if re.Event.PubKey != g.Key.Pubkey || re.Target != g.ReactionTarget || re.Choice != bot.Approve {
			t.Errorf("reaction = %s → %s %s, want %s → %s approve", re.Event.PubKey, re.Target, re.Choice, g.Key.Pubkey, g.ReactionTarget)
		}
	})
	t.Run("signing again gives the same event", func(t *testing.T) {
		var want nostr.Event
		if err := json.Unmarshal(g.Reaction, &want); err != nil {
			t.Fatal(err)
		}
		k, _ := ParseKey(g.Key.Secret)
		var tags [][]string
		for _, tag := range want.Tags {
			tags = append(tags, tag)
		}
		raw, id, err := k.SignEvent(want.Kind, want.Content, tags, want.CreatedAt.Time())
		if err != nil {
			t.Fatal(err)
		}
		if id != want.ID {
			t.Errorf("id = %s, want %s", id, want.ID)
		}
		var got nostr.Event
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		// BIP-340 signing here is deterministic (no aux randomness).
		if got.Sig != want.Sig {
			t.Errorf("sig = %s, want %s", got.Sig, want.Sig)
		}
	})
	t.Run("events signed elsewhere verify", func(t *testing.T) {
		for i, raw := range g.External {
			if _, err := VerifyEvent(raw); err != nil {
				t.Errorf("external event %d: %v", i, err)
			}
		}
	})
	t.Run("BIP-340 vectors", func(t *testing.T) {
		for i, v := range g.BIP340 {
			k, err := ParseKey(v.Secret)
			if err != nil {
				t.Fatalf("vector %d: %v", i, err)
			}
			if k.PublicKey() != strings.ToLower(v.Pubkey) {
				t.Errorf("vector %d: public key = %s, want %s", i, k.PublicKey(), strings.ToLower(v.Pubkey))
			}
			msg, _ := hex.DecodeString(v.Message)
			if err := verifySchnorr(strings.ToLower(v.Pubkey), msg, v.Signature); err != nil {
				t.Errorf("vector %d: %v", i, err)
			}
			msg[0] ^= 1
			if err := verifySchnorr(strings.ToLower(v.Pubkey), msg, v.Signature); err == nil {
				t.Errorf("vector %d verifies over another message", i)
			}
		}
	})
}

var (
	ntAlice   = mustKey("1111111111111111111111111111111111111111111111111111111111111111")
	ntMallory = mustKey("2222222222222222222222222222222222222222222222222222222222222222")
	ntTarget  = strings.Repeat("ab", 32)
	ntNow     = time.Unix(1767225600, 0)
)

func mustKey(s string) *Key {
	k, err := ParseKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

// ntEvent is a reaction by alice to ntTarget at ntNow; edit changes it
// before signing.
func ntEvent(edit func(*nostr.Event)) *nostr.Event {
	ev := &nostr.Event{
		Kind: nostr.KindReaction, CreatedAt: nostr.Timestamp(ntNow.Unix()), Content: "✅",
		Tags: nostr.Tags{{"e", ntTarget}, {"p", strings.Repeat("cd", 32)}},
	}
	if edit != nil {
		edit(ev)
	}
	if err := ntAlice.Sign(ev); err != nil {
		panic(err)
	}
	return ev
}

func ntJSON(ev *nostr.Event) []byte {
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return b
}

// ntMap returns raw as a map so a test can change one field and keep the rest.
func ntMap(raw []byte, edit func(map[string]any)) []byte {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		panic(err)
	}
	edit(m)
	b, _ := json.Marshal(m)
	return b
}

// ntUpperPubkey is alice's reaction with her pubkey written in uppercase
// hex, hashed and signed that way: valid BIP-340, but not the identity a
// persona lists (NIP-01 keys are lowercase hex).
func ntUpperPubkey() []byte {
	ev := &nostr.Event{
		Kind: nostr.KindReaction, CreatedAt: nostr.Timestamp(ntNow.Unix()), Content: "✅",
		Tags: nostr.Tags{{"e", ntTarget}}, PubKey: strings.ToUpper(ntAlice.PublicKey()),
	}
	h := sha256.Sum256(ev.Serialize())
	ev.ID = hex.EncodeToString(h[:])
	sk, _ := hex.DecodeString(ntAlice.secret)
	priv, _ := btcec.PrivKeyFromBytes(sk)
	sig, err := schnorr.Sign(priv, h[:])
	if err != nil {
		panic(err)
	}
	ev.Sig = hex.EncodeToString(sig.Serialize())
	return ntJSON(ev)
}

func TestParseReaction(t *testing.T) {
	good := ntEvent(nil)
	goodRaw := ntJSON(good)
	deny := ntEvent(func(ev *nostr.Event) { ev.Content = "❌" })
	byMallory := func() *nostr.Event {
		ev := &nostr.Event{Kind: 7, CreatedAt: good.CreatedAt, Content: "✅", Tags: good.Tags}
		ntMallory.Sign(ev)
		return ev
	}()
	huge := ntEvent(func(ev *nostr.Event) { ev.Content = strings.Repeat("✅", 300_000) })

	tests := []struct {
		name   string
		raw    []byte
		now    time.Time
		code   string // "" for success
		reason string
		choice bot.Choice
		target string
	}{
		{name: "valid approve", raw: goodRaw, now: ntNow, choice: bot.Approve, target: ntTarget},
		{name: "valid deny", raw: ntJSON(deny), now: ntNow, choice: bot.Deny, target: ntTarget},
		{name: "plus is a like, not an approval", raw: ntJSON(ntEvent(func(ev *nostr.Event) { ev.Content = "+" })), now: ntNow, choice: bot.Other, target: ntTarget},
		{name: "minus denies", raw: ntJSON(ntEvent(func(ev *nostr.Event) { ev.Content = "-" })), now: ntNow, choice: bot.Deny, target: ntTarget},
		{name: "emoji with variation selector", raw: ntJSON(ntEvent(func(ev *nostr.Event) { ev.Content = "✔️" })), now: ntNow, choice: bot.Approve, target: ntTarget},
		{name: "other emoji", raw: ntJSON(ntEvent(func(ev *nostr.Event) { ev.Content = "👍" })), now: ntNow, choice: bot.Other, target: ntTarget},
		{name: "last e tag is the target", raw: ntJSON(ntEvent(func(ev *nostr.Event) {
			ev.Tags = nostr.Tags{{"e", strings.Repeat("01", 32)}, {"e", strings.ToUpper(ntTarget), "wss://relay"}}
		})), now: ntNow, choice: bot.Approve, target: ntTarget},
		{name: "unknown fields are kept out of the id", raw: ntMap(goodRaw, func(m map[string]any) { m["extra"] = 1 }), now: ntNow, choice: bot.Approve, target: ntTarget},
		{name: "huge content", raw: ntJSON(huge), now: ntNow, choice: bot.Other, target: ntTarget},
		{name: "created 10m ago is in the window", raw: goodRaw, now: ntNow.Add(MaxEventAge), choice: bot.Approve, target: ntTarget},
		{name: "created 5m ahead is in the window", raw: goodRaw, now: ntNow.Add(-MaxEventSkew), choice: bot.Approve, target: ntTarget},

		{name: "forged signature", raw: ntMap(goodRaw, func(m map[string]any) { m["sig"] = byMallory.Sig }), now: ntNow, code: bot.EUnauthorized, reason: "signature"},
		{name: "signature with a flipped bit", raw: ntMap(goodRaw, func(m map[string]any) {
			b, _ := hex.DecodeString(good.Sig)
			b[40] ^= 1
			m["sig"] = hex.EncodeToString(b)
		}), now: ntNow, code: bot.EUnauthorized, reason: "signature"},
		{name: "tampered content", raw: ntMap(goodRaw, func(m map[string]any) { m["content"] = "❌" }), now: ntNow, code: bot.EUnauthorized, reason: "id does not match"},
		{name: "tampered tags", raw: ntMap(goodRaw, func(m map[string]any) { m["tags"] = [][]string{{"e", strings.Repeat("01", 32)}} }), now: ntNow, code: bot.EUnauthorized, reason: "id does not match"},
		{name: "tampered created_at", raw: ntMap(goodRaw, func(m map[string]any) { m["created_at"] = ntNow.Unix() + 1 }), now: ntNow, code: bot.EUnauthorized, reason: "id does not match"},
		{name: "another's pubkey on alice's event", raw: ntMap(goodRaw, func(m map[string]any) { m["pubkey"] = byMallory.PubKey }), now: ntNow, code: bot.EUnauthorized},
		{name: "alice's pubkey, id and sig on other content", raw: ntMap(ntJSON(deny), func(m map[string]any) { m["id"], m["sig"] = good.ID, good.Sig }), now: ntNow, code: bot.EUnauthorized, reason: "id does not match"},
		{name: "right id for the content, sig over other content", raw: ntMap(ntJSON(deny), func(m map[string]any) { m["sig"] = good.Sig }), now: ntNow, code: bot.EUnauthorized, reason: "signature"},
		{name: "uppercase id", raw: ntMap(goodRaw, func(m map[string]any) { m["id"] = strings.ToUpper(good.ID) }), now: ntNow, code: bot.EInvalid, reason: "lowercase"},
		{name: "short id", raw: ntMap(goodRaw, func(m map[string]any) { m["id"] = "abcd" }), now: ntNow, code: bot.EInvalid, reason: "id"},
		{name: "empty id", raw: ntMap(goodRaw, func(m map[string]any) { delete(m, "id") }), now: ntNow, code: bot.EInvalid, reason: "id"},
		{name: "id not hex", raw: ntMap(goodRaw, func(m map[string]any) { m["id"] = strings.Repeat("zz", 32) }), now: ntNow, code: bot.EInvalid, reason: "id"},
		{name: "short pubkey", raw: ntMap(goodRaw, func(m map[string]any) { m["pubkey"] = "ab" }), now: ntNow, code: bot.EInvalid, reason: "pubkey"},
		{name: "pubkey not on the curve", raw: ntMap(goodRaw, func(m map[string]any) { m["pubkey"] = strings.Repeat("ff", 32) }), now: ntNow, code: bot.EUnauthorized},
		{name: "uppercase pubkey, signed by its holder", raw: ntUpperPubkey(), now: ntNow, code: bot.EInvalid, reason: "lowercase"},
		{name: "uppercase sig", raw: ntMap(goodRaw, func(m map[string]any) { m["sig"] = strings.ToUpper(good.Sig) }), now: ntNow, code: bot.EInvalid, reason: "lowercase"},
		{name: "short sig", raw: ntMap(goodRaw, func(m map[string]any) { m["sig"] = good.Sig[:64] }), now: ntNow, code: bot.EInvalid, reason: "sig"},
		{name: "wrong kind", raw: ntJSON(ntEvent(func(ev *nostr.Event) { ev.Kind = 1 })), now: ntNow, code: bot.EInvalid, reason: "kind 1"},
		{name: "no e tag", raw: ntJSON(ntEvent(func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"p", ntTarget}} })), now: ntNow, code: bot.EInvalid, reason: "e tag"},
		{name: "e tag without a value", raw: ntJSON(ntEvent(func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"e"}} })), now: ntNow, code: bot.EInvalid, reason: "e tag"},
		{name: "e tag with a short id", raw: ntJSON(ntEvent(func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"e", "abcd"}} })), now: ntNow, code: bot.EInvalid, reason: "e tag"},
		{name: "last e tag is not an id", raw: ntJSON(ntEvent(func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"e", ntTarget}, {"e", "x"}} })), now: ntNow, code: bot.EInvalid, reason: "e tag"},
		{name: "stale created_at", raw: goodRaw, now: ntNow.Add(MaxEventAge + time.Second), code: bot.EStale, reason: "older"},
		{name: "future created_at", raw: goodRaw, now: ntNow.Add(-MaxEventSkew - time.Second), code: bot.EStale, reason: "future"},
		{name: "created_at zero", raw: ntJSON(ntEvent(func(ev *nostr.Event) { ev.CreatedAt = 0 })), now: ntNow, code: bot.EStale},
		{name: "created_at far future", raw: ntJSON(ntEvent(func(ev *nostr.Event) { ev.CreatedAt = 1 << 62 })), now: ntNow, code: bot.EStale},
		{name: "created_at negative", raw: ntJSON(ntEvent(func(ev *nostr.Event) { ev.CreatedAt = -1 })), now: ntNow, code: bot.EStale},
		{name: "malformed JSON", raw: goodRaw[:len(goodRaw)-1], now: ntNow, code: bot.EInvalid, reason: "JSON"},
		{name: "empty body", raw: nil, now: ntNow, code: bot.EInvalid},
		{name: "null", raw: []byte("null"), now: ntNow, code: bot.EInvalid},
		{name: "array", raw: []byte(`["EVENT",{}]`), now: ntNow, code: bot.EInvalid},
		{name: "empty object", raw: []byte(`{}`), now: ntNow, code: bot.EInvalid},
		{name: "kind as a string", raw: ntMap(goodRaw, func(m map[string]any) { m["kind"] = "7" }), now: ntNow, code: bot.EInvalid},
		{name: "tags not an array", raw: ntMap(goodRaw, func(m map[string]any) { m["tags"] = "e" }), now: ntNow, code: bot.EInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re, err := ParseReaction(tt.raw, tt.now)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("ParseReaction: %v", err)
				}
				if re.Choice != tt.choice || re.Target != tt.target {
					t.Errorf("reaction = %s on %s, want %s on %s", re.Choice, re.Target, tt.choice, tt.target)
				}
				if re.Event.PubKey != ntAlice.PublicKey() {
					t.Errorf("pubkey = %s, want alice's", re.Event.PubKey)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseReaction accepted it: %+v", re)
			}
			if got := bot.ErrorCode(err); got != tt.code {
				t.Errorf("code = %s (%v), want %s", got, err, tt.code)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("err = %q, want it to mention %q", err, tt.reason)
			}
		})
	}
}

func TestReactionBallot(t *testing.T) {
	raw := ntJSON(ntEvent(nil))
	re, err := ParseReaction(raw, ntNow)
	if err != nil {
		t.Fatal(err)
	}
	b := re.Ballot(raw)
	want := bot.Ballot{
		Ref:      bot.MessageRef{Platform: bot.Nostr, ID: ntTarget},
		Voter:    bot.Identity{Platform: bot.Nostr, ID: ntAlice.PublicKey()},
		Choice:   bot.Approve,
		Proof:    bot.ProofSigned,
		DedupKey: "nostr:" + re.Event.ID,
	}
	if b.Ref != want.Ref || b.Voter != want.Voter || b.Choice != want.Choice || b.Proof != want.Proof || b.DedupKey != want.DedupKey || b.RequestID != "" {
		t.Errorf("ballot = %+v, want %+v", b, want)
	}
	if !bytes.Equal(b.Evidence, raw) {
		t.Errorf("evidence is not the raw event")
	}
}

func BenchmarkVerifyEvent(b *testing.B) {
	raw := ntJSON(ntEvent(nil))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := VerifyEvent(raw); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func FuzzParseReaction(f *testing.F) {
	g := loadNostrGolden(f)
	f.Add([]byte(g.Reaction))
	for _, e := range g.External {
		f.Add([]byte(e))
	}
	good := ntJSON(ntEvent(nil))
	f.Add(good)
	f.Add(ntJSON(ntEvent(func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"e"}, {"e", ntTarget, "wss://r"}, {}} })))
	f.Add(ntMap(good, func(m map[string]any) { m["id"] = "ab" }))
	f.Add(ntMap(good, func(m map[string]any) { m["tags"] = []any{nil, []any{"e", nil}} }))
	f.Add([]byte(`{"id":"","pubkey":"","sig":"","kind":7,"tags":[["e"]],"content":"✅","created_at":1}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"kind":1e400}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		re, err := ParseReaction(raw, ntNow)
		if err != nil {
			if code := bot.ErrorCode(err); code == bot.EInternal {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		// Whatever passed is a genuine, correctly signed reaction.
		if re.Event.Kind != nostr.KindReaction || len(re.Target) != 64 || !re.Event.CheckID() {
			t.Fatalf("accepted %q as %+v", raw, re)
		}
		if ok, err := re.Event.CheckSignature(); !ok || err != nil {
			t.Fatalf("accepted a bad signature: %q", raw)
		}
	})
}
