package signing_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// A golden vector: the key from seed 00 01 … 1f, signing
// `1700000000{"type":1}`; cross-checked with Python's cryptography package.
const (
	discordGoldenPublic = "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8"
	discordGoldenTS     = "1700000000"
	discordGoldenBody   = `{"type":1}`
	discordGoldenSig    = "c1098e97d711377f30225d53d94b89d43537f92e5b3afaddc590781b1f9f9d4b" +
		"2eeab335d370be3b9a090bc61a85b86448bc140dcd195f1569c2bff181257607"
)

func discordGoldenKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

func discordHeader(sig, ts string) http.Header {
	h := http.Header{}
	if sig != "" {
		h.Set(signing.DiscordSignatureHeader, sig)
	}
	if ts != "" {
		h.Set(signing.DiscordTimestampHeader, ts)
	}
	return h
}

func TestDiscordGoldenVector(t *testing.T) {
	priv := discordGoldenKey(t)
	if got := hex.EncodeToString(priv.Public().(ed25519.PublicKey)); got != discordGoldenPublic {
		t.Fatalf("public key = %s, want %s", got, discordGoldenPublic)
	}
	if got := signing.SignDiscord(priv, discordGoldenTS, []byte(discordGoldenBody)); got != discordGoldenSig {
		t.Fatalf("SignDiscord = %s, want %s", got, discordGoldenSig)
	}
	pub, err := signing.ParseDiscordPublicKey(discordGoldenPublic)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1700000000, 0)
	if err := signing.VerifyDiscord(discordHeader(discordGoldenSig, discordGoldenTS), []byte(discordGoldenBody), pub, now); err != nil {
		t.Fatalf("VerifyDiscord(golden) = %v, want nil", err)
	}
}

func TestVerifyDiscord(t *testing.T) {
	priv := discordGoldenKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	_, otherPriv, _ := ed25519.GenerateKey(nil)
	now := time.Unix(1700000000, 0)
	body := []byte(`{"type":3,"id":"1"}`)
	ts := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	sign := func(ts string) string { return signing.SignDiscord(priv, ts, body) }

	tests := []struct {
		name   string
		header http.Header
		body   []byte
		key    ed25519.PublicKey
		want   error // nil: accepted
		code   string
	}{
		{name: "valid", header: discordHeader(sign(ts(0)), ts(0))},
		{name: "five minutes old", header: discordHeader(sign(ts(-5*time.Minute)), ts(-5*time.Minute))},
		{name: "five minutes ahead", header: discordHeader(sign(ts(5*time.Minute)), ts(5*time.Minute))},
		{name: "uppercase hex signature", header: discordHeader(upperHex(sign(ts(0))), ts(0))},
		{name: "stale by a second", header: discordHeader(sign(ts(-5*time.Minute-time.Second)), ts(-5*time.Minute-time.Second)), want: signing.ErrDiscordStale, code: bot.EStale},
		{name: "ten minutes old", header: discordHeader(sign(ts(-10*time.Minute)), ts(-10*time.Minute)), want: signing.ErrDiscordStale, code: bot.EStale},
		{name: "six minutes ahead", header: discordHeader(sign(ts(6*time.Minute)), ts(6*time.Minute)), want: signing.ErrDiscordStale, code: bot.EStale},
		{name: "wrong key", header: discordHeader(signing.SignDiscord(otherPriv, ts(0), body), ts(0)), want: signing.ErrDiscordSignature, code: bot.EUnauthorized},
		{name: "tampered body", header: discordHeader(sign(ts(0)), ts(0)), body: []byte(`{"type":3,"id":"2"}`), want: signing.ErrDiscordSignature, code: bot.EUnauthorized},
		{name: "timestamp moved", header: discordHeader(sign(ts(-10*time.Minute)), ts(0)), want: signing.ErrDiscordSignature, code: bot.EUnauthorized},
		{name: "no headers", header: http.Header{}, want: signing.ErrDiscordMissingHeader, code: bot.EUnauthorized},
		{name: "no signature", header: discordHeader("", ts(0)), want: signing.ErrDiscordMissingHeader, code: bot.EUnauthorized},
		{name: "no timestamp", header: discordHeader(sign(ts(0)), ""), want: signing.ErrDiscordMissingHeader, code: bot.EUnauthorized},
		{name: "signature not hex", header: discordHeader(string(make([]byte, 128)), ts(0)), want: signing.ErrDiscordMalformed, code: bot.EUnauthorized},
		{name: "signature too short", header: discordHeader(sign(ts(0))[:126], ts(0)), want: signing.ErrDiscordMalformed, code: bot.EUnauthorized},
		{name: "timestamp with sign", header: discordHeader(sign("+"+ts(0)), "+"+ts(0)), want: signing.ErrDiscordMalformed, code: bot.EUnauthorized},
		{name: "timestamp not a number", header: discordHeader(sign("soon"), "soon"), want: signing.ErrDiscordMalformed, code: bot.EUnauthorized},
		{name: "timestamp too long", header: discordHeader(sign("1234567890123"), "1234567890123"), want: signing.ErrDiscordMalformed, code: bot.EUnauthorized},
		{name: "no key", header: discordHeader(sign(ts(0)), ts(0)), key: ed25519.PublicKey{}, want: signing.ErrDiscordNoKey, code: bot.EUnauthorized},
		{name: "short key", header: discordHeader(sign(ts(0)), ts(0)), key: pub[:31], want: signing.ErrDiscordNoKey, code: bot.EUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, key := body, pub
			if tt.body != nil {
				b = tt.body
			}
			if tt.key != nil {
				key = tt.key
			}
			err := signing.VerifyDiscord(tt.header, b, key, now)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("VerifyDiscord = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("VerifyDiscord = %v, want %v", err, tt.want)
			}
			if _, ok := errors.AsType[*signing.RequestError](err); !ok {
				t.Errorf("VerifyDiscord = %T, want *signing.RequestError", err)
			}
			if got := bot.ErrorCode(err); got != tt.code {
				t.Errorf("bot.ErrorCode = %q, want %q", got, tt.code)
			}
		})
	}
}

func upperHex(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func TestParseDiscordPublicKey(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{discordGoldenPublic, true},
		{" " + discordGoldenPublic + "\n", true},
		{discordGoldenPublic[:62], false},
		{discordGoldenPublic + "00", false},
		{"zz" + discordGoldenPublic[2:], false},
		{"", false},
	}
	for _, tt := range tests {
		k, err := signing.ParseDiscordPublicKey(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("ParseDiscordPublicKey(%q) error = %v, want ok %v", tt.in, err, tt.ok)
		}
		if err == nil && hex.EncodeToString(k) != discordGoldenPublic {
			t.Errorf("ParseDiscordPublicKey(%q) = %x", tt.in, k)
		}
	}
}

// FuzzVerifyDiscord: whatever the headers and body, VerifyDiscord never
// panics; it accepts exactly the requests signed by the key whose
// timestamp is well-formed and inside the window, and a request it accepts
// stops verifying once one byte of its body changes.
func FuzzVerifyDiscord(f *testing.F) {
	f.Add([]byte(discordGoldenBody), discordGoldenTS, discordGoldenSig, true)
	f.Add([]byte(`{"type":3}`), "1700000000", "", true)
	f.Add([]byte{}, "1699999700", "00", true)
	f.Add([]byte("\xff"), "-1", "zz", false)
	f.Add([]byte(`{}`), "99999999999999999999", discordGoldenSig, false)
	priv := discordGoldenKey(f)
	pub := priv.Public().(ed25519.PublicKey)
	now := time.Unix(1700000000, 0)
	f.Fuzz(func(t *testing.T, body []byte, ts, sig string, signIt bool) {
		if signIt {
			sig = signing.SignDiscord(priv, ts, body)
		}
		err := signing.VerifyDiscord(discordHeader(sig, ts), body, pub, now)
		if err != nil {
			if _, ok := errors.AsType[*signing.RequestError](err); !ok {
				t.Fatalf("error %T %v is not a *RequestError", err, err)
			}
			if signIt && ts != "" && errors.Is(err, signing.ErrDiscordSignature) {
				t.Fatalf("a request signed with the key was refused as unsigned: %v", err)
			}
			return
		}
		// Accepted: it must be well-formed, in the window and really signed.
		secs, perr := strconv.ParseInt(ts, 10, 64)
		if perr != nil || ts[0] == '+' || ts[0] == '-' {
			t.Fatalf("accepted timestamp %q", ts)
		}
		if d := now.Sub(time.Unix(secs, 0)); d > signing.DiscordWindow || d < -signing.DiscordWindow {
			t.Fatalf("accepted timestamp %q, %s from now", ts, d)
		}
		raw, herr := hex.DecodeString(sig)
		if herr != nil || !ed25519.Verify(pub, append([]byte(ts), body...), raw) {
			t.Fatalf("accepted a signature that does not verify: ts %q sig %q", ts, sig)
		}
		tampered := append([]byte{}, body...)
		if len(tampered) == 0 {
			tampered = []byte{0}
		} else {
			tampered[len(tampered)/2] ^= 0x01
		}
		if err := signing.VerifyDiscord(discordHeader(sig, ts), tampered, pub, now); !errors.Is(err, signing.ErrDiscordSignature) {
			t.Fatalf("a tampered body verified: %v", err)
		}
	})
}
