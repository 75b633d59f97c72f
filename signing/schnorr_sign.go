package signing

import "github.com/btcsuite/btcd/btcec/v2/schnorr"

// schnorrSigner is one implementation of BIP-340 signing with btcec's
// deterministic nonces (RFC 6979 over the secret and the message), so
// every implementation makes the same 64 bytes for the same key and
// message: the golden vectors pin them, and a receipt sealed twice is the
// same receipt. schnorrSigners lists the compiled-in ones, the one in use
// first: pure Go (btcec) always, libsecp256k1 in front of it when built
// with -tags libsecp256k1 (schnorr_libsecp256k1.go).
type schnorrSigner struct {
	name string
	sign func(k *Key, msg *[32]byte) ([64]byte, error)
}

// signDigest signs a 32-byte message (a Nostr event id, an audit
// checkpoint's digest) with the implementation in use.
func (k *Key) signDigest(msg *[32]byte) ([64]byte, error) { return schnorrSigners[0].sign(k, msg) }

func signBtcec(k *Key, msg *[32]byte) ([64]byte, error) {
	var opts []schnorr.SignOption
	if k.fast {
		opts = append(opts, schnorr.FastSign())
	}
	sig, err := schnorr.Sign(k.priv, msg[:], opts...)
	if err != nil {
		return [64]byte{}, err
	}
	return [64]byte(sig.Serialize()), nil
}
