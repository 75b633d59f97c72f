package signing

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
)

const signerHex = "3bf0c63fcb93463407af97a5e5ee64fa883d107ef9e558472c4eb9aaaefa459d"

func TestParseBunkerURL(t *testing.T) {
	npub := (&Key{public: signerHex}).Npub()
	for _, tc := range []struct {
		name, in string
		relays   []string
		secret   string
	}{
		{"as signers show it", "bunker://" + signerHex + "?relay=wss%3A%2F%2Frelay.damus.io&relay=wss%3A%2F%2Frelay.nsecbunker.com&secret=abc123",
			[]string{"wss://relay.damus.io", "wss://relay.nsecbunker.com"}, "abc123"},
		{"unescaped relay, no secret", "bunker://" + signerHex + "?relay=wss://relay.example/", []string{"wss://relay.example"}, ""},
		{"uppercase key, spaces around", "  bunker://" + strings.ToUpper(signerHex) + "?relay=ws://127.0.0.1:7777\n", []string{"ws://127.0.0.1:7777"}, ""},
		{"npub instead of hex", "bunker://" + npub + "?relay=wss://r.example", []string{"wss://r.example"}, ""},
		{"a relay twice", "bunker://" + signerHex + "?relay=wss://r.example&relay=wss://R.example/", []string{"wss://r.example"}, ""},
		{"unknown parameters ignored", "bunker://" + signerHex + "?relay=wss://r.example&name=phone&perms=sign_event", []string{"wss://r.example"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ParseBunkerURL(tc.in)
			if err != nil {
				t.Fatalf("ParseBunkerURL(%q) = %v", tc.in, err)
			}
			if b.Signer != signerHex || !slices.Equal(b.Relays, tc.relays) || b.Secret != tc.secret {
				t.Fatalf("got %+v, want signer %s relays %v secret %q", b, signerHex, tc.relays, tc.secret)
			}
			again, err := ParseBunkerURL(b.String())
			if err != nil || again.String() != b.String() {
				t.Fatalf("String() %q does not parse back to itself: %v %v", b.String(), again, err)
			}
			if tc.secret != "" && strings.Contains(b.Redacted(), tc.secret) {
				t.Errorf("Redacted() %q shows the secret", b.Redacted())
			}
		})
	}
}

// TestMalformedBunkerURLsAreRefused: each is refused with a message
// saying what is wrong (and never by looking a name up).
func TestMalformedBunkerURLsAreRefused(t *testing.T) {
	ok := "?relay=wss://r.example"
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "empty bunker URL"},
		{"nip05 name", "alice@example.com", "NIP-05"},
		{"https", "https://" + signerHex + ok, "starts with bunker://"},
		{"nostrconnect", "nostrconnect://" + signerHex + ok, "starts with bunker://"},
		{"no key", "bunker://" + ok, "64 hex"},
		{"short key", "bunker://" + signerHex[:60] + ok, "64 hex"},
		{"not hex", "bunker://" + strings.Repeat("z", 64) + ok, "64 hex"},
		{"not on the curve", "bunker://" + strings.Repeat("f", 64) + ok, "not a point on the curve"},
		{"bad npub", "bunker://npub1qqqqqqqq" + ok, "signer's key"},
		{"port", "bunker://" + signerHex + ":443" + ok, "host:port"},
		{"user", "bunker://me:pw@" + signerHex + ok, "user name"},
		{"path", "bunker://" + signerHex + "/x" + ok, "path"},
		{"fragment", "bunker://" + signerHex + ok + "#x", "fragment"},
		{"no relay", "bunker://" + signerHex, "no relay"},
		{"empty relay", "bunker://" + signerHex + "?relay=", "ws:// or wss://"},
		{"http relay", "bunker://" + signerHex + "?relay=https://r.example", "ws:// or wss://"},
		{"relay without scheme", "bunker://" + signerHex + "?relay=r.example", "ws:// or wss://"},
		{"relay without host", "bunker://" + signerHex + "?relay=wss://", "no host"},
		{"relay with user", "bunker://" + signerHex + "?relay=wss://u:p@r.example", "user name"},
		{"relay with query", "bunker://" + signerHex + "?relay=" + "wss%3A%2F%2Fr.example%3Fa%3Db", "query"},
		{"relay with a space", "bunker://" + signerHex + "?relay=wss%3A%2F%2Fr.example%2F%20x", "characters"},
		{"relay with an escape", "bunker://" + signerHex + "?relay=wss%3A%2F%2Fr.example%2F%1b%5B2J", "unprintable"},
		{"too many relays", "bunker://" + signerHex + "?" + strings.Repeat("relay=wss://r.example&", 11), "at most"},
		{"two secrets", "bunker://" + signerHex + ok + "&secret=a&secret=b", "more than one secret"},
		{"empty secret", "bunker://" + signerHex + ok + "&secret=", "secret must be"},
		{"secret with a newline", "bunker://" + signerHex + ok + "&secret=a%0Ab", "secret must be"},
		{"bad query", "bunker://" + signerHex + "?relay=%zz", "query does not parse"},
		{"too long", "bunker://" + signerHex + ok + "&secret=" + strings.Repeat("a", 5000), "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ParseBunkerURL(tc.in)
			if err == nil {
				t.Fatalf("ParseBunkerURL(%q) = %+v, want an error", tc.in, b)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if strings.ContainsAny(err.Error(), "\x1b\n") {
				t.Errorf("error %q carries control characters", err)
			}
		})
	}
}

// TestUnsignedReactionIsWhatTheLocalKeySigns: a bunker is asked to sign
// exactly the event `approve` signs with a local key.
func TestUnsignedReactionIsWhatTheLocalKeySigns(t *testing.T) {
	k := NewKey()
	at := time.Unix(1_700_000_000, 0)
	target, author := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	for _, c := range []bot.Choice{bot.Approve, bot.Deny, bot.Always} {
		for _, reason := range []string{"", "use the staging bucket"} {
			raw, err := NewReactionWithReason(k, target, author, c, reason, at)
			if err != nil {
				t.Fatal(err)
			}
			var local nostr.Event
			json.Unmarshal(raw, &local)
			ev, err := UnsignedReaction(target, author, c, reason, at)
			if err != nil {
				t.Fatal(err)
			}
			if err := k.Sign(&ev); err != nil {
				t.Fatal(err)
			}
			if ev.ID != local.ID {
				t.Errorf("%s %q: unsigned reaction %v, local key signs %v", c, reason, ev, local)
			}
		}
	}
	if _, err := UnsignedReaction(target, author, bot.Choice("maybe"), "", at); err == nil {
		t.Error("a choice that is no reaction was accepted")
	}
	if _, err := UnsignedReaction(target, author, bot.Approve, strings.Repeat("x", MaxVoteReason+1), at); err == nil {
		t.Error("an oversized reason was accepted")
	}
}

// TestSignerReturningAnotherEventIsRefused: whatever a remote signer (or
// a relay between) hands back that is not the event asked is refused.
func TestSignerReturningAnotherEventIsRefused(t *testing.T) {
	k := NewKey()
	at := time.Now().Truncate(time.Second)
	target, author := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	asked, _ := UnsignedReaction(target, author, bot.Deny, "no", at)
	sign := func(key *Key, change func(*nostr.Event)) []byte {
		ev := asked
		ev.Tags = slices.Clone(asked.Tags)
		change(&ev)
		if err := key.Sign(&ev); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(ev)
		return b
	}
	honest := sign(k, func(*nostr.Event) {})
	if raw, err := CheckSignedAsAsked(asked, k.PublicKey(), honest); err != nil {
		t.Fatalf("the honest signature is refused: %v", err)
	} else if _, err := ParseReaction(raw, time.Now()); err != nil {
		t.Fatalf("what it returns is no reaction: %v", err)
	}
	other := strings.Repeat("ef", 32)
	for _, tc := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"approves when asked to deny", sign(k, func(e *nostr.Event) { e.Content = "✅" }), "content"},
		{"names another request", sign(k, func(e *nostr.Event) { e.Tags[1] = nostr.Tag{"e", other} }), "instead of"},
		{"adds an e tag naming another request", sign(k, func(e *nostr.Event) { e.Tags = append(e.Tags, nostr.Tag{"e", other}) }), "extra tag"},
		{"drops the reason", sign(k, func(e *nostr.Event) { e.Tags = e.Tags[1:] }), "tags differ"},
		{"another kind", sign(k, func(e *nostr.Event) { e.Kind = 1 }), "kind"},
		{"another time", sign(k, func(e *nostr.Event) { e.CreatedAt += 3600 }), "created_at"},
		{"another key", sign(NewKey(), func(*nostr.Event) {}), "signed by"},
		{"signature over other content", func() []byte {
			var ev nostr.Event
			json.Unmarshal(honest, &ev)
			ev.Content = "✅"
			b, _ := json.Marshal(ev)
			return b
		}(), "does not match"},
		{"not json", []byte("ack"), "not valid JSON"},
		{"unsigned", func() []byte { b, _ := json.Marshal(asked); return b }(), "must be 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := CheckSignedAsAsked(asked, k.PublicKey(), tc.raw)
			if err == nil {
				t.Fatalf("accepted %s", raw)
			}
			if !errors.Is(err, ErrNotAsked) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q: want ErrNotAsked saying %q", err, tc.want)
			}
		})
	}
}

func FuzzParseBunkerURL(f *testing.F) {
	for _, s := range []string{
		"bunker://" + signerHex + "?relay=wss%3A%2F%2Frelay.damus.io&secret=abc",
		"bunker://" + signerHex + "?relay=ws://127.0.0.1:7777&relay=wss://a.b/c",
		"bunker://" + signerHex,
		"alice@example.com",
		"bunker://" + signerHex + "?relay=wss://%zz",
		"bunker://npub1" + strings.Repeat("q", 58) + "?relay=wss://x",
		"BUNKER://" + strings.ToUpper(signerHex) + "?relay=wss://X.Y/&secret=%41",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBunkerURL(s)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\x1b\r\n") {
				t.Fatalf("error %q carries control characters", err)
			}
			return
		}
		if len(b.Signer) != 64 || !isLowerHex(b.Signer) || len(b.Relays) == 0 || len(b.Relays) > maxBunkerRelays {
			t.Fatalf("accepted %q as %+v", s, b)
		}
		for _, r := range b.Relays {
			if !strings.HasPrefix(r, "ws://") && !strings.HasPrefix(r, "wss://") || !printable(r) {
				t.Fatalf("accepted relay %q from %q", r, s)
			}
		}
		again, err := ParseBunkerURL(b.String())
		if err != nil || again.Signer != b.Signer || !slices.Equal(again.Relays, b.Relays) || again.Secret != b.Secret {
			t.Fatalf("%q parsed as %+v; its String() %q parses as %+v, %v", s, b, b.String(), again, err)
		}
	})
}
