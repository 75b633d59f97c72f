package signing

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Discord's interaction-signing headers
// (discord.com/developers/docs/interactions/overview#setting-up-an-endpoint)
// and the replay window signoff adds: Discord signs the timestamp but sets
// no limit on its age, so without one a captured click could be replayed.
const (
	DiscordSignatureHeader = "X-Signature-Ed25519"
	DiscordTimestampHeader = "X-Signature-Timestamp"
	DiscordWindow          = 5 * time.Minute
)

// Why a Discord interaction was refused; test with errors.Is. Every error
// VerifyDiscord returns is a *RequestError wrapping one of these.
var (
	ErrDiscordNoKey         = errors.New("discord public key is not configured")
	ErrDiscordMissingHeader = errors.New("discord signature headers are missing")
	ErrDiscordMalformed     = errors.New("discord signature headers are malformed")
	ErrDiscordSignature     = errors.New("discord signature does not verify")
	ErrDiscordStale         = errors.New("discord request timestamp is outside the replay window")
)

// ParseDiscordPublicKey reads the application's public key as shown in the
// Discord developer portal: 64 hex digits.
func ParseDiscordPublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("discord public key must be %d hex digits", 2*ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// SignDiscord returns the X-Signature-Ed25519 value Discord sends for body
// at timestamp ts (decimal Unix seconds, exactly as in the header). Tests
// and local tools use it; the gateway only verifies.
func SignDiscord(key ed25519.PrivateKey, ts string, body []byte) string {
	return hex.EncodeToString(ed25519.Sign(key, discordMessage(ts, body)))
}

func discordMessage(ts string, body []byte) []byte {
	msg := make([]byte, 0, len(ts)+len(body))
	msg = append(msg, ts...)
	return append(msg, body...)
}

// VerifyDiscord checks an interaction from Discord on its raw body, before
// anything in it is parsed: the Ed25519 signature of "<timestamp><body>"
// under the application's public key, and a timestamp no more than
// DiscordWindow away from now in either direction. It does not
// deduplicate: a valid request replayed inside the window verifies again,
// so callers deduplicate on the interaction id.
func VerifyDiscord(header http.Header, body []byte, key ed25519.PublicKey, now time.Time) error {
	if len(key) != ed25519.PublicKeySize {
		// ed25519.Verify panics on a key of the wrong size.
		return &RequestError{Err: ErrDiscordNoKey}
	}
	sig, ts := header.Get(DiscordSignatureHeader), header.Get(DiscordTimestampHeader)
	switch {
	case sig == "" && ts == "":
		return &RequestError{Err: ErrDiscordMissingHeader, Detail: DiscordSignatureHeader + " and " + DiscordTimestampHeader}
	case sig == "":
		return &RequestError{Err: ErrDiscordMissingHeader, Detail: DiscordSignatureHeader}
	case ts == "":
		return &RequestError{Err: ErrDiscordMissingHeader, Detail: DiscordTimestampHeader}
	}
	secs, ok := parseUnixSeconds(ts)
	if !ok {
		return &RequestError{Err: ErrDiscordMalformed, Detail: DiscordTimestampHeader + " must be decimal Unix seconds"}
	}
	if len(sig) != 2*ed25519.SignatureSize {
		return &RequestError{Err: ErrDiscordMalformed, Detail: fmt.Sprintf("%s must be %d hex digits", DiscordSignatureHeader, 2*ed25519.SignatureSize)}
	}
	raw, err := hex.DecodeString(sig)
	if err != nil {
		return &RequestError{Err: ErrDiscordMalformed, Detail: fmt.Sprintf("%s must be %d hex digits", DiscordSignatureHeader, 2*ed25519.SignatureSize)}
	}
	// The signature is checked before the clock so that an unsigned
	// request learns nothing about the gateway's time.
	if !ed25519.Verify(key, discordMessage(ts, body), raw) {
		return &RequestError{Err: ErrDiscordSignature}
	}
	return checkWindow(ts, secs, now, DiscordWindow, ErrDiscordStale)
}
