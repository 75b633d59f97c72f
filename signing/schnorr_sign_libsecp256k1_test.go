//go:build libsecp256k1 && cgo

package signing

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
)

// TestSignMatchesBtcec misses no nonce but btcec's: each wrong one below,
// the kind of slip a port makes, gives valid signatures that are not
// btcec's, and the comparison counts every one of them.
func TestSignMatchCatchesWrongNonce(t *testing.T) {
	keys, msgs := signKeys(t, 40), signMessages("wrong nonce ", 2)
	odd := 0
	for _, k := range keys {
		if k.oddY {
			odd++
		}
	}
	with := func(nonce func(k *Key, d, msg *[32]byte, iteration uint32) *btcec.ModNScalar) func(*Key, *[32]byte) ([64]byte, error) {
		return func(k *Key, msg *[32]byte) ([64]byte, error) {
			return signLibsecp256k1Nonce(k, msg, func(d, msg *[32]byte, i uint32) *btcec.ModNScalar { return nonce(k, d, msg, i) })
		}
	}
	perKey := 2 * len(msgs) // checked and unchecked
	for _, c := range []struct {
		name string
		sign func(*Key, *[32]byte) ([64]byte, error)
		want int // signatures that differ from btcec's
	}{
		{"btcec's", with(func(_ *Key, d, msg *[32]byte, i uint32) *btcec.ModNScalar { return btcecNonce(d, msg, i) }), 0},
		{"next iteration", with(func(_ *Key, d, msg *[32]byte, i uint32) *btcec.ModNScalar { return btcecNonce(d, msg, i+1) }), perKey * len(keys)},
		{"no extra data", with(func(_ *Key, d, msg *[32]byte, i uint32) *btcec.ModNScalar {
			return btcec.NonceRFC6979(d[:], msg[:], nil, nil, i)
		}), perKey * len(keys)},
		// Only odd-Y keys have their secret negated.
		{"secret not negated", with(func(k *Key, _, msg *[32]byte, i uint32) *btcec.ModNScalar {
			var raw [32]byte
			k.priv.Key.PutBytes(&raw)
			return btcecNonce(&raw, msg, i)
		}), perKey * odd},
	} {
		t.Run(c.name, func(t *testing.T) {
			if n, first := signMismatches(t, c.sign, keys, msgs); n != c.want {
				t.Errorf("%d signatures differ from btcec's, want %d (first: %s)", n, c.want, first)
			}
		})
	}
}

// A signature that does not verify under the key's public key is refused,
// not returned (BIP-340's fault check, kept where btcec keeps it); an
// Unchecked key skips the check. The fault is made by giving the check
// another key's public key.
func TestLibsecp256k1SignRefusesSignatureThatDoesNotVerify(t *testing.T) {
	alice, mallory := mustKey(hex.EncodeToString(bytes.Repeat([]byte{0xa1}, 32))), mustKey(hex.EncodeToString(bytes.Repeat([]byte{0x3a}, 32)))
	faulty := *alice
	faulty.secp.xonly = mallory.secp.xonly
	msg := sha256.Sum256([]byte("approve"))
	if sig, err := signLibsecp256k1(&faulty, &msg); !errors.Is(err, errSignFault) {
		t.Fatalf("checked: got %x, %v; want %v", sig, err, errSignFault)
	}
	sig, err := signLibsecp256k1(faulty.Unchecked(), &msg)
	if err != nil {
		t.Fatalf("unchecked: %v", err)
	}
	want, _ := schnorr.Sign(alice.priv, msg[:])
	if !bytes.Equal(sig[:], want.Serialize()) {
		t.Errorf("unchecked: got %x, want btcec's %x", sig, want.Serialize())
	}
}

// FuzzSignMatchesBtcec: libsecp256k1 signing makes btcec's bytes for any
// key and message (a 32-byte secret in range is used as it is, anything
// else hashed to one; a message other than 32 bytes is hashed).
func FuzzSignMatchesBtcec(f *testing.F) {
	f.Add([]byte("alice"), []byte("a message"))
	f.Add(bytes.Repeat([]byte{0xff}, 32), make([]byte, 32))
	f.Add(append(make([]byte, 31), 1), bytes.Repeat([]byte{0xff}, 32))
	f.Fuzz(func(t *testing.T, secret, text []byte) {
		var s btcec.ModNScalar
		if len(secret) != 32 || s.SetByteSlice(secret) || s.IsZero() {
			h := sha256.Sum256(secret)
			secret = h[:]
		}
		k, err := ParseKey(hex.EncodeToString(secret))
		if err != nil {
			t.Skip(err) // a hash at or above n: odds about 2⁻¹²⁸
		}
		msg := sha256.Sum256(text)
		if len(text) == 32 {
			msg = [32]byte(text)
		}
		want, err := schnorr.Sign(k.priv, msg[:])
		if err != nil {
			t.Fatal(err)
		}
		got, err := signLibsecp256k1(k, &msg)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:], want.Serialize()) {
			t.Fatalf("key %s msg %x: libsecp256k1 %x, btcec %x", k.public, msg, got, want.Serialize())
		}
	})
}
