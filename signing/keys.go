package signing

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// Key is a secp256k1 key pair used for Nostr events (BIP-340 Schnorr).
type Key struct {
	secret string // 64 hex
	public string // 64 hex, x-only
	// priv is secret parsed once: parsing derives the public point, a
	// scalar multiplication each signature used to repeat.
	priv *btcec.PrivateKey
	// oddY: the public point's Y is odd, so BIP-340 signs with the
	// secret negated (the x-only key names the even-Y point).
	oddY bool
	// secp is the key pair libsecp256k1 signs with, made once (a build
	// without -tags libsecp256k1 keeps nothing here).
	secp secpKey
	// fast skips the check of each signature it makes (see Unchecked).
	fast bool
}

// Unchecked is k signing without verifying each signature it makes.
// BIP-340 recommends that check against faults that could make a signer
// leak its key; the signatures are the same bytes. For throwaway keys in
// load generators (bench), where the check doubles what signing costs
// the machine the gateway shares — never for the gateway's own key.
func (k *Key) Unchecked() *Key {
	c := *k
	c.fast = true
	return &c
}

// NewKey generates a new key.
func NewKey() *Key {
	k, _ := ParseKey(nostr.GeneratePrivateKey())
	return k
}

// ParseKey reads a secret key given as nsec or 64 hex characters.
func ParseKey(s string) (*Key, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "nsec1") {
		prefix, v, err := nip19.Decode(s)
		if err != nil || prefix != "nsec" {
			return nil, errors.New("not a valid nsec key")
		}
		s = v.(string)
	}
	if len(s) != 64 {
		return nil, errors.New("a secret key is an nsec or 64 hex characters")
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, errors.New("a secret key is an nsec or 64 hex characters")
	}
	// Zero and values at or above the curve order are not keys; btcec
	// would silently reduce them (and zero cannot sign).
	var scalar btcec.ModNScalar
	if overflow := scalar.SetByteSlice(b); overflow || scalar.IsZero() {
		return nil, errors.New("a secret key must be between 1 and the secp256k1 curve order")
	}
	pub, err := nostr.GetPublicKey(s)
	if err != nil {
		return nil, fmt.Errorf("derive public key: %w", err)
	}
	priv, _ := btcec.PrivKeyFromBytes(b)
	k := &Key{secret: strings.ToLower(s), public: pub, priv: priv}
	// As btcec's schnorr.Sign reads the parity, from the compressed form.
	k.oddY = priv.PubKey().SerializeCompressed()[0] == 0x03
	if k.secp, err = newSecpKey(b, pub); err != nil {
		return nil, err
	}
	clear(b)
	return k, nil
}

// PublicKey returns the x-only public key in hex.
func (k *Key) PublicKey() string { return k.public }

// Npub returns the public key in NIP-19 form.
func (k *Key) Npub() string {
	s, _ := nip19.EncodePublicKey(k.public)
	return s
}

// Nsec returns the secret key in NIP-19 form.
func (k *Key) Nsec() string {
	s, _ := nip19.EncodePrivateKey(k.secret)
	return s
}

// LogValue keeps the secret out of logs.
func (k *Key) LogValue() slog.Value { return slog.StringValue(k.Npub()) }

// String shows the public half only.
func (k *Key) String() string { return k.Npub() }

// SignEvent signs a Nostr event with the key and returns its JSON and id.
func (k *Key) SignEvent(kind int, content string, tags [][]string, at time.Time) (json.RawMessage, string, error) {
	ev := nostr.Event{Kind: kind, Content: content, CreatedAt: nostr.Timestamp(at.Unix())}
	for _, t := range tags {
		ev.Tags = append(ev.Tags, nostr.Tag(t))
	}
	if err := k.Sign(&ev); err != nil {
		return nil, "", fmt.Errorf("sign event: %w", err)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return nil, "", err
	}
	return raw, ev.ID, nil
}

// Sign signs ev in place (it sets PubKey, ID and Sig). It is not
// go-nostr's Sign, which -tags libsecp256k1 switches to libsecp256k1's
// random nonces: here the same event signs to the same bytes in every
// build (btcec's deterministic nonces, which libsecp256k1 is handed under
// that tag; see schnorr_sign.go), as the golden vectors pin.
func (k *Key) Sign(ev *nostr.Event) error {
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	ev.PubKey = k.public
	h := sha256.Sum256(ev.Serialize())
	sig, err := k.signDigest(&h)
	if err != nil {
		return err
	}
	ev.ID = hex.EncodeToString(h[:])
	ev.Sig = hex.EncodeToString(sig[:])
	return nil
}

// ParsePublicKey reads a public key given as npub or 64 hex characters and
// returns it as lowercase hex.
func ParsePublicKey(s string) (string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "npub1") {
		prefix, v, err := nip19.Decode(s)
		if err != nil || prefix != "npub" {
			return "", errors.New("not a valid npub")
		}
		return v.(string), nil
	}
	if len(s) != 64 {
		return "", errors.New("a public key is an npub or 64 hex characters")
	}
	if _, err := hex.DecodeString(s); err != nil {
		return "", errors.New("a public key is an npub or 64 hex characters")
	}
	return strings.ToLower(s), nil
}

// LoadOrCreateKey reads the key kept at path, or makes one and writes it
// there (0600) on first use.
func LoadOrCreateKey(path string) (*Key, bool, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		k, err := ParseKey(string(b))
		if err != nil {
			return nil, false, fmt.Errorf("key file %s: %w", path, err)
		}
		return k, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("read key: %w", err)
	}
	k := NewKey()
	if err := WriteKey(path, k); err != nil {
		return nil, false, err
	}
	return k, true, nil
}

// WriteKey writes k's nsec to path with mode 0600, refusing to overwrite.
func WriteKey(path string, k *Key) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create key dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	if _, err := f.WriteString(k.Nsec() + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("write key: %w", err)
	}
	return f.Close()
}
