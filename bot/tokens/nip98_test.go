package tokens_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/tokens"
	"github.com/signoff/signoff/signing"
)

const callURL = "http://127.0.0.1:8080/v1/tokens"

var body = []byte(`{"name":"me","scopes":["admin"]}`)

func signed(t testing.TB, k *signing.Key, ev nostr.Event) string {
	t.Helper()
	if err := k.Sign(&ev); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ev)
	return tokens.HTTPAuthHeader(raw)
}

func TestParseHTTPAuthAcceptsTheCallItNames(t *testing.T) {
	k := signing.NewKey()
	now := time.Now()
	call := tokens.Call{Method: "POST", URL: callURL, Body: body}
	p, err := tokens.ParseHTTPAuth(signed(t, k, tokens.HTTPAuthEvent(call, now.Add(-30*time.Second))), call, now)
	if err != nil || p.PubKey != k.PublicKey() {
		t.Fatalf("got %+v, %v", p, err)
	}
	// No body: no payload tag needed.
	get := tokens.Call{Method: "GET", URL: callURL}
	if _, err := tokens.ParseHTTPAuth(signed(t, k, tokens.HTTPAuthEvent(get, now)), get, now); err != nil {
		t.Errorf("GET without payload: %v", err)
	}
}

// TestParseHTTPAuthRefuses: each bad event is a 401 that says why.
func TestParseHTTPAuthRefuses(t *testing.T) {
	k := signing.NewKey()
	now := time.Now()
	call := tokens.Call{Method: "POST", URL: callURL, Body: body}
	ev := func(mod func(*nostr.Event)) string {
		e := tokens.HTTPAuthEvent(call, now)
		mod(&e)
		return signed(t, k, e)
	}
	good := ev(func(*nostr.Event) {})
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(good, "Nostr "))
	var tampered nostr.Event
	json.Unmarshal(raw, &tampered)
	tampered.Tags[0][1] = "http://127.0.0.1:8080/v1/grants"
	tb, _ := json.Marshal(tampered)
	for _, tc := range []struct{ name, header, want string }{
		{"not base64", "Nostr !!!", "not base64"},
		{"not JSON", "Nostr " + base64.StdEncoding.EncodeToString([]byte("{")), "not valid JSON"},
		{"bearer scheme", "Bearer " + strings.TrimPrefix(good, "Nostr "), `must be "Nostr`},
		{"tampered after signing", tokens.HTTPAuthHeader(tb), "id does not match"},
		{"stale", ev(func(e *nostr.Event) { e.CreatedAt = nostr.Timestamp(now.Add(-61 * time.Second).Unix()) }), "more than 1m0s from now"},
		{"from the future", ev(func(e *nostr.Event) { e.CreatedAt = nostr.Timestamp(now.Add(2 * time.Minute).Unix()) }), "more than 1m0s from now"},
		{"other kind", ev(func(e *nostr.Event) { e.Kind = 1 }), "kind 1"},
		{"other URL", ev(func(e *nostr.Event) { e.Tags[0][1] = "http://127.0.0.1:8080/v1/grants" }), "not this call's URL"},
		{"other host", ev(func(e *nostr.Event) { e.Tags[0][1] = "http://evil.example:8080/v1/tokens" }), "not this call's URL"},
		{"other method", ev(func(e *nostr.Event) { e.Tags[1][1] = "DELETE" }), `method "DELETE"`},
		{"wrong payload", ev(func(e *nostr.Event) { e.Tags[2][1] = strings.Repeat("0", 64) }), "payload hash does not match"},
		{"no payload with a body", ev(func(e *nostr.Event) { e.Tags = e.Tags[:2] }), "needs a payload tag"},
		{"no u tag", ev(func(e *nostr.Event) { e.Tags = e.Tags[1:] }), "no u tag"},
		{"two u tags", ev(func(e *nostr.Event) { e.Tags = append(e.Tags, nostr.Tag{"u", callURL}) }), "2 u tags"},
		{"empty u tag", ev(func(e *nostr.Event) { e.Tags[0] = nostr.Tag{"u"} }), "has no value"},
		{"too long", "Nostr " + strings.Repeat("A", 9000), "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tokens.ParseHTTPAuth(tc.header, call, now)
			if bot.ErrorCode(err) != bot.EUnauthorized || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a 401 saying %q", err, tc.want)
			}
		})
	}
}

func FuzzParseHTTPAuth(f *testing.F) {
	// A fixed key: the fuzz workers are other processes.
	k, err := signing.ParseKey("4444444444444444444444444444444444444444444444444444444444444444")
	if err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	call := tokens.Call{Method: "POST", URL: callURL, Body: body}
	f.Add(signed(f, k, tokens.HTTPAuthEvent(call, now)))
	f.Add("Nostr e30=")
	f.Add("Nostr ")
	f.Add("nostr eyJraW5kIjoyNzIzNX0")
	f.Fuzz(func(t *testing.T, header string) {
		p, err := tokens.ParseHTTPAuth(header, call, now)
		if err == nil {
			if p == nil || p.PubKey != k.PublicKey() {
				t.Fatalf("accepted %q as %+v", header, p)
			}
			return
		}
		if bot.ErrorCode(err) != bot.EUnauthorized {
			t.Fatalf("error %v is not a 401", err)
		}
	})
}

// BenchmarkParseHTTPAuth is a person's signed call checked, beside its
// floor: the event's id and BIP-340 signature alone (signing.VerifyEvent).
// What ParseHTTPAuth adds (base64, tags, URL, payload hash) is the gap.
func BenchmarkParseHTTPAuth(b *testing.B) {
	k := signing.NewKey()
	call := tokens.Call{Method: "POST", URL: callURL, Body: body}
	now := time.Now()
	h := signed(b, k, tokens.HTTPAuthEvent(call, now))
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Nostr "))
	b.Run("floor-verify-event", func(b *testing.B) {
		for b.Loop() {
			if _, err := signing.VerifyEvent(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse-http-auth", func(b *testing.B) {
		for b.Loop() {
			if _, err := tokens.ParseHTTPAuth(h, call, now); err != nil {
				b.Fatal(err)
			}
		}
	})
}
