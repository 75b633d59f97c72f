package signing

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
)

// Slack's worked example from "Verifying requests from Slack"
// (docs.slack.dev/authentication/verifying-requests-from-slack): a slash
// command body, its timestamp and the signature Slack computed.
const (
	slackDocSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	slackDocTS     = "1531420618"
	slackDocBody   = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	slackDocSig    = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

var slackDocTime = time.Unix(1531420618, 0)

func slackHeader(sig, ts string) http.Header {
	h := http.Header{}
	if sig != "" {
		h.Set(SlackSignatureHeader, sig)
	}
	if ts != "" {
		h.Set(SlackTimestampHeader, ts)
	}
	return h
}

func TestSignSlackMatchesSlackDocs(t *testing.T) {
	if got := SignSlack(slackDocSecret, slackDocTS, []byte(slackDocBody)); got != slackDocSig {
		t.Fatalf("SignSlack = %s, want %s", got, slackDocSig)
	}
}

func TestVerifySlack(t *testing.T) {
	body := []byte(slackDocBody)
	tampered := []byte(strings.Replace(slackDocBody, "roadrunner", "wilecoyote", 1))
	upper := "v0=" + strings.ToUpper(slackDocSig[3:])
	flipped := slackDocSig[:len(slackDocSig)-1] + "4"
	future := strconv.FormatInt(slackDocTime.Add(SlackWindow+time.Second).Unix(), 10)
	tests := []struct {
		name   string
		header http.Header
		body   []byte
		secret string
		now    time.Time
		want   error // nil: verifies
	}{
		{"slack docs example", slackHeader(slackDocSig, slackDocTS), body, slackDocSecret, slackDocTime, nil},
		{"4m59s later", slackHeader(slackDocSig, slackDocTS), body, slackDocSecret, slackDocTime.Add(4*time.Minute + 59*time.Second), nil},
		{"exactly 5m later", slackHeader(slackDocSig, slackDocTS), body, slackDocSecret, slackDocTime.Add(SlackWindow), nil},
		{"exactly 5m earlier", slackHeader(slackDocSig, slackDocTS), body, slackDocSecret, slackDocTime.Add(-SlackWindow), nil},
		{"5m01s later: stale", slackHeader(slackDocSig, slackDocTS), body, slackDocSecret, slackDocTime.Add(5*time.Minute + time.Second), ErrSlackStale},
		{"6m earlier: future timestamp", slackHeader(slackDocSig, slackDocTS), body, slackDocSecret, slackDocTime.Add(-6 * time.Minute), ErrSlackStale},
		{"years later: replayed", slackHeader(slackDocSig, slackDocTS), body, slackDocSecret, time.Now(), ErrSlackStale},
		{"wrong secret", slackHeader(slackDocSig, slackDocTS), body, "another-secret", slackDocTime, ErrSlackSignature},
		{"tampered body", slackHeader(slackDocSig, slackDocTS), tampered, slackDocSecret, slackDocTime, ErrSlackSignature},
		{"empty body", slackHeader(slackDocSig, slackDocTS), nil, slackDocSecret, slackDocTime, ErrSlackSignature},
		{"last hex digit changed", slackHeader(flipped, slackDocTS), body, slackDocSecret, slackDocTime, ErrSlackSignature},
		{"timestamp moved, signature kept", slackHeader(slackDocSig, "1531420619"), body, slackDocSecret, slackDocTime, ErrSlackSignature},
		{"future timestamp signed", slackHeader(SignSlack(slackDocSecret, future, body), future), body, slackDocSecret, slackDocTime, ErrSlackStale},
		{"uppercase hex is the same bytes", slackHeader(upper, slackDocTS), body, slackDocSecret, slackDocTime, nil},
		{"no secret configured", slackHeader(slackDocSig, slackDocTS), body, "", slackDocTime, ErrSlackNoSecret},
		{"no headers", http.Header{}, body, slackDocSecret, slackDocTime, ErrSlackMissingHeader},
		{"no signature", slackHeader("", slackDocTS), body, slackDocSecret, slackDocTime, ErrSlackMissingHeader},
		{"no timestamp", slackHeader(slackDocSig, ""), body, slackDocSecret, slackDocTime, ErrSlackMissingHeader},
		{"v1 prefix", slackHeader("v1="+slackDocSig[3:], slackDocTS), body, slackDocSecret, slackDocTime, ErrSlackMalformed},
		{"no prefix", slackHeader(slackDocSig[3:], slackDocTS), body, slackDocSecret, slackDocTime, ErrSlackMalformed},
		{"short signature", slackHeader(slackDocSig[:40], slackDocTS), body, slackDocSecret, slackDocTime, ErrSlackMalformed},
		{"long signature", slackHeader(slackDocSig+"00", slackDocTS), body, slackDocSecret, slackDocTime, ErrSlackMalformed},
		{"non-hex signature", slackHeader("v0="+strings.Repeat("zz", 32), slackDocTS), body, slackDocSecret, slackDocTime, ErrSlackMalformed},
		{"timestamp with sign", slackHeader(slackDocSig, "+1531420618"), body, slackDocSecret, slackDocTime, ErrSlackMalformed},
		{"negative timestamp", slackHeader(slackDocSig, "-1"), body, slackDocSecret, slackDocTime, ErrSlackMalformed},
		{"fractional timestamp", slackHeader(slackDocSig, "1531420618.5"), body, slackDocSecret, slackDocTime, ErrSlackMalformed},
		{"timestamp with space", slackHeader(slackDocSig, " 1531420618"), body, slackDocSecret, slackDocTime, ErrSlackMalformed},
		{"huge timestamp", slackHeader(slackDocSig, "99999999999999999999"), body, slackDocSecret, slackDocTime, ErrSlackMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifySlack(tt.header, tt.body, tt.secret, tt.now)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("VerifySlack = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("VerifySlack = %v, want errors.Is %v", err, tt.want)
			}
			if _, ok := errors.AsType[*RequestError](err); !ok {
				t.Errorf("VerifySlack = %T, want *RequestError", err)
			}
			wantCode := bot.EUnauthorized
			if tt.want == ErrSlackStale {
				wantCode = bot.EStale
			}
			if got := bot.ErrorCode(err); got != wantCode {
				t.Errorf("bot.ErrorCode = %q, want %q", got, wantCode)
			}
		})
	}
}

func TestVerifySlackSignsTheRawBytes(t *testing.T) {
	// The same JSON with different whitespace is a different request.
	now := time.Unix(1_700_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	body := []byte(`{"type":"event_callback","event_id":"Ev1"}`)
	h := slackHeader(SignSlack("s3cret", ts, body), ts)
	if err := VerifySlack(h, body, "s3cret", now); err != nil {
		t.Fatalf("VerifySlack(signed body) = %v, want nil", err)
	}
	spaced := []byte(`{"type": "event_callback", "event_id": "Ev1"}`)
	if err := VerifySlack(h, spaced, "s3cret", now); !errors.Is(err, ErrSlackSignature) {
		t.Fatalf("VerifySlack(reformatted body) = %v, want ErrSlackSignature", err)
	}
}

func FuzzVerifySlack(f *testing.F) {
	f.Add(slackDocSecret, slackDocTS, []byte(slackDocBody), slackDocSig, int64(0))
	f.Add("s", "1700000000", []byte(`{}`), "v0=00", int64(301))
	f.Add("", "", []byte(nil), "", int64(-301))
	f.Fuzz(func(t *testing.T, secret, ts string, body []byte, sig string, offset int64) {
		now := slackDocTime.Add(time.Duration(offset%3600) * time.Second)
		// Arbitrary headers never panic, and verify only if they are
		// exactly what SignSlack makes.
		err := VerifySlack(slackHeader(sig, ts), body, secret, now)
		if err == nil && sig != SignSlack(secret, ts, body) && !strings.EqualFold(sig, SignSlack(secret, ts, body)) {
			t.Fatalf("VerifySlack accepted signature %q, want %q", sig, SignSlack(secret, ts, body))
		}
		if err != nil {
			if _, ok := errors.AsType[*RequestError](err); !ok {
				t.Fatalf("VerifySlack error %T is not a *RequestError", err)
			}
		}
		// A properly signed request verifies inside the window and is
		// refused outside it; any change to the body breaks it.
		if secret == "" {
			return
		}
		signedTS := strconv.FormatInt(slackDocTime.Unix(), 10)
		good := SignSlack(secret, signedTS, body)
		err = VerifySlack(slackHeader(good, signedTS), body, secret, now)
		inWindow := offset%3600 >= -300 && offset%3600 <= 300
		switch {
		case inWindow && err != nil:
			t.Fatalf("signed request at skew %ds: %v, want nil", offset%3600, err)
		case !inWindow && !errors.Is(err, ErrSlackStale):
			t.Fatalf("signed request at skew %ds: %v, want ErrSlackStale", offset%3600, err)
		}
		changed := append([]byte{'x'}, body...)
		if err := VerifySlack(slackHeader(good, signedTS), changed, secret, slackDocTime); !errors.Is(err, ErrSlackSignature) {
			t.Fatalf("changed body: %v, want ErrSlackSignature", err)
		}
	})
}

func ExampleVerifySlack() {
	h := http.Header{}
	h.Set(SlackTimestampHeader, "1531420618")
	h.Set(SlackSignatureHeader, "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503")
	body := []byte(slackDocBody)

	fmt.Println(VerifySlack(h, body, "8f742231b10e8888abcd99yyyzzz85a5", time.Unix(1531420618, 0).Add(time.Minute)))
	err := VerifySlack(h, body, "8f742231b10e8888abcd99yyyzzz85a5", time.Unix(1531420618, 0).Add(time.Hour))
	fmt.Println(errors.Is(err, ErrSlackStale), bot.ErrorCode(err))
	// Output:
	// <nil>
	// true stale
}
