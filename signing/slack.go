package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"
)

// Slack's request-signing headers and replay window
// (docs.slack.dev/authentication/verifying-requests-from-slack).
const (
	SlackSignatureHeader = "X-Slack-Signature"
	SlackTimestampHeader = "X-Slack-Request-Timestamp"
	SlackWindow          = 5 * time.Minute
)

// Why a Slack request was refused; test with errors.Is. Every error
// VerifySlack returns is a *RequestError wrapping one of these.
var (
	ErrSlackNoSecret      = errors.New("slack signing secret is not configured")
	ErrSlackMissingHeader = errors.New("slack signature headers are missing")
	ErrSlackMalformed     = errors.New("slack signature headers are malformed")
	ErrSlackSignature     = errors.New("slack signature does not match")
	ErrSlackStale         = errors.New("slack request timestamp is outside the replay window")
)

// SignSlack returns the X-Slack-Signature value Slack sends for body at
// timestamp ts (decimal Unix seconds, exactly as in the header).
func SignSlack(secret, ts string, body []byte) string {
	return "v0=" + hex.EncodeToString(slackMAC(secret, ts, body))
}

func slackMAC(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:"))
	m.Write([]byte(ts))
	m.Write([]byte(":"))
	m.Write(body)
	return m.Sum(nil)
}

// VerifySlack checks a request from Slack on its raw body, before anything
// in it is parsed: the v0 HMAC-SHA256 of "v0:<timestamp>:<body>" under the
// signing secret, compared in constant time, and a timestamp no more than
// SlackWindow away from now in either direction. It does not deduplicate:
// a valid request replayed inside the window verifies again, so callers
// deduplicate on Slack's event_id.
func VerifySlack(header http.Header, body []byte, secret string, now time.Time) error {
	if secret == "" {
		return &RequestError{Err: ErrSlackNoSecret}
	}
	sig, ts := header.Get(SlackSignatureHeader), header.Get(SlackTimestampHeader)
	switch {
	case sig == "" && ts == "":
		return &RequestError{Err: ErrSlackMissingHeader, Detail: SlackSignatureHeader + " and " + SlackTimestampHeader}
	case sig == "":
		return &RequestError{Err: ErrSlackMissingHeader, Detail: SlackSignatureHeader}
	case ts == "":
		return &RequestError{Err: ErrSlackMissingHeader, Detail: SlackTimestampHeader}
	}
	secs, ok := parseUnixSeconds(ts)
	if !ok {
		return &RequestError{Err: ErrSlackMalformed, Detail: SlackTimestampHeader + " must be decimal Unix seconds"}
	}
	const prefix = "v0="
	if len(sig) != len(prefix)+2*sha256.Size || sig[:len(prefix)] != prefix {
		return &RequestError{Err: ErrSlackMalformed, Detail: SlackSignatureHeader + ` must be "v0=" and 64 hex digits`}
	}
	got, err := hex.DecodeString(sig[len(prefix):])
	if err != nil {
		return &RequestError{Err: ErrSlackMalformed, Detail: SlackSignatureHeader + ` must be "v0=" and 64 hex digits`}
	}
	// The signature is checked before the clock so that an unsigned
	// request learns nothing about the gateway's time.
	if !hmac.Equal(got, slackMAC(secret, ts, body)) {
		return &RequestError{Err: ErrSlackSignature}
	}
	return checkWindow(ts, secs, now, SlackWindow, ErrSlackStale)
}
