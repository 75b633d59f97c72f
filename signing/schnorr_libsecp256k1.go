//go:build libsecp256k1 && cgo

package signing

/*
#cgo LDFLAGS: -lsecp256k1
#include <string.h>
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

// One context for the process. It signs as well as verifies, so it is
// randomized once, before any use (blinding of the base-point
// multiplication against side channels; signatures do not change), and
// only read after that, which any number of threads may do at once.
static secp256k1_context *signoff_context(const unsigned char *seed32) {
	secp256k1_context *ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
	if (ctx != NULL && !secp256k1_context_randomize(ctx, seed32)) {
		secp256k1_context_destroy(ctx);
		return NULL;
	}
	return ctx;
}

static int signoff_verify(const secp256k1_context *ctx, const secp256k1_xonly_pubkey *key, const unsigned char *msg32, const unsigned char *sig64) {
	return secp256k1_schnorrsig_verify(ctx, sig64, msg32, 32, key);
}

// Parse and verify in one call: one cgo crossing for an uncached key.
static int signoff_parse_verify(const secp256k1_context *ctx, const unsigned char *pub32, const unsigned char *msg32, const unsigned char *sig64, secp256k1_xonly_pubkey *out) {
	if (!secp256k1_xonly_pubkey_parse(ctx, out, pub32)) return 0;
	return secp256k1_schnorrsig_verify(ctx, sig64, msg32, 32, out);
}

// The key pair of seckey32 (96 bytes, opaque: it holds the secret), and
// its x-only public key, parsed (64) and as bytes (32).
static int signoff_keypair(const secp256k1_context *ctx, const unsigned char *seckey32, secp256k1_keypair *pair, secp256k1_xonly_pubkey *pub, unsigned char *pub32) {
	return secp256k1_keypair_create(ctx, pair, seckey32) &&
		secp256k1_keypair_xonly_pub(ctx, pub, NULL, pair) &&
		secp256k1_xonly_pubkey_serialize(ctx, pub32, pub);
}

// The nonce function: the nonce is the caller's (data, 32 bytes), not one
// derived from the arguments.
static int signoff_given_nonce(unsigned char *nonce32, const unsigned char *msg, size_t msglen, const unsigned char *key32, const unsigned char *xonly_pk32, const unsigned char *algo, size_t algolen, void *data) {
	memcpy(nonce32, data, 32);
	return 1;
}

// Sign msg32 with the key pair and the nonce k in nonce32. libsecp256k1
// then does what BIP-340 (and btcec) do: the secret negated when the
// public key's Y is odd, R = k*G and k negated when R's Y is odd,
// s = k + e*d. check verifies the signature made (BIP-340's fault check).
// 1 signed, 0 not signed, -1 made a signature that does not verify.
static int signoff_sign(const secp256k1_context *ctx, const secp256k1_keypair *pair, const secp256k1_xonly_pubkey *pub, const unsigned char *msg32, unsigned char *nonce32, unsigned char *sig64, int check) {
	secp256k1_schnorrsig_extraparams extra = SECP256K1_SCHNORRSIG_EXTRAPARAMS_INIT;
	extra.noncefp = signoff_given_nonce;
	extra.ndata = nonce32;
	if (!secp256k1_schnorrsig_sign_custom(ctx, sig64, msg32, 32, pair, &extra)) return 0;
	if (check && !secp256k1_schnorrsig_verify(ctx, sig64, msg32, 32, pub)) return -1;
	return 1;
}
*/
import "C"

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"unsafe"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// secpContext is made as a variable, not in init, so a key parsed while
// the package's variables are initialized (ParseKey refers to it) finds it.
var secpContext = func() *C.secp256k1_context {
	var seed [32]byte
	rand.Read(seed[:])
	ctx := C.signoff_context((*C.uchar)(unsafe.Pointer(&seed[0])))
	zero32(&seed)
	if ctx == nil {
		panic("libsecp256k1: cannot create a context")
	}
	return ctx
}()

var schnorrSigners = []schnorrSigner{
	{name: "libsecp256k1", sign: signLibsecp256k1},
	{name: "btcec", sign: signBtcec},
}

func init() {
	schnorrVerifiers = append([]SchnorrVerifier{{Name: "libsecp256k1", Verify: verifyLibsecp256k1}}, schnorrVerifiers...)
}

// xonlyKey is libsecp256k1's parsed secp256k1_xonly_pubkey (64 opaque
// bytes), cached like btcec's keys.
type xonlyKey = [64]byte

var secpKeys = keyCache[*xonlyKey]{}

func verifyLibsecp256k1(pub, msg, sig []byte) bool {
	if len(pub) != 32 || len(msg) != 32 || len(sig) != 64 {
		return false
	}
	m := (*C.uchar)(unsafe.Pointer(&msg[0]))
	s := (*C.uchar)(unsafe.Pointer(&sig[0]))
	if key := secpKeys.get(pub); key != nil {
		return C.signoff_verify(secpContext, (*C.secp256k1_xonly_pubkey)(unsafe.Pointer(key)), m, s) == 1
	}
	key := new(xonlyKey)
	if C.signoff_parse_verify(secpContext, (*C.uchar)(unsafe.Pointer(&pub[0])), m, s, (*C.secp256k1_xonly_pubkey)(unsafe.Pointer(key))) != 1 {
		return false
	}
	secpKeys.put(pub, key)
	return true
}

// secpKey is a key as libsecp256k1 signs with it, made once per key: the
// key pair costs a base-point multiplication.
type secpKey struct {
	pair  [96]byte // secp256k1_keypair (holds the secret)
	xonly xonlyKey // its public key, parsed, to check each signature
	pub   [32]byte // and as bytes, for btcec's challenge check
}

// newSecpKey makes the key pair of secret (32 bytes), whose public key
// go-nostr gave as pubHex: a key pair with another public key is refused.
func newSecpKey(secret []byte, pubHex string) (secpKey, error) {
	var k secpKey
	if C.signoff_keypair(secpContext, (*C.uchar)(unsafe.Pointer(&secret[0])),
		(*C.secp256k1_keypair)(unsafe.Pointer(&k.pair)),
		(*C.secp256k1_xonly_pubkey)(unsafe.Pointer(&k.xonly)),
		(*C.uchar)(unsafe.Pointer(&k.pub))) != 1 {
		return secpKey{}, errors.New("libsecp256k1: not a secret key")
	}
	if hex.EncodeToString(k.pub[:]) != pubHex {
		return secpKey{}, errors.New("libsecp256k1: the key pair's public key is not the key's")
	}
	return k, nil
}

// bip340NonceExtra is btcec's rfc6979ExtraDataV0, SHA-256("BIP-340"): the
// extra data its RFC 6979 nonces for BIP-340 are derived with.
var bip340NonceExtra = sha256.Sum256([]byte("BIP-340"))

// btcecNonce is the nonce btcec's schnorr.Sign uses on its iteration'th
// try: RFC 6979 over d (the secret as BIP-340 signs with it, negated for
// an odd-Y key) and the message.
func btcecNonce(d, msg *[32]byte, iteration uint32) *btcec.ModNScalar {
	return btcec.NonceRFC6979(d[:], msg[:], bip340NonceExtra[:], nil, iteration)
}

// signLibsecp256k1 signs with libsecp256k1 and btcec's nonce: the same 64
// bytes as signBtcec, in about a third of the time when checked.
func signLibsecp256k1(k *Key, msg *[32]byte) ([64]byte, error) {
	return signLibsecp256k1Nonce(k, msg, btcecNonce)
}

// errSignFault: a signature made did not verify, the fault BIP-340's check
// is there for (a signer that releases such a signature can leak its key).
// btcec would try its next nonce; this refuses to sign instead.
var errSignFault = errors.New("libsecp256k1: the signature made does not verify")

// signLibsecp256k1Nonce is signLibsecp256k1 with its nonce given, so a
// test can show that a nonce other than btcec's is caught.
func signLibsecp256k1Nonce(k *Key, msg *[32]byte, nonce func(d, msg *[32]byte, iteration uint32) *btcec.ModNScalar) ([64]byte, error) {
	// btcec's steps 1–5: d, negated if the public key's Y is odd, as the
	// bytes its nonce is derived from (zeroed after, as btcec does).
	d := k.priv.Key
	if k.oddY {
		d.Negate()
	}
	var db [32]byte
	d.PutBytes(&db)
	d.Zero()
	defer zero32(&db)
	check := C.int(1)
	if k.fast {
		check = 0
	}
	var sig [64]byte
	for iteration := uint32(0); ; iteration++ {
		n := nonce(&db, msg, iteration)
		var nb [32]byte
		n.PutBytes(&nb)
		n.Zero()
		r := C.signoff_sign(secpContext,
			(*C.secp256k1_keypair)(unsafe.Pointer(&k.secp.pair)),
			(*C.secp256k1_xonly_pubkey)(unsafe.Pointer(&k.secp.xonly)),
			(*C.uchar)(unsafe.Pointer(&msg[0])), (*C.uchar)(unsafe.Pointer(&nb[0])),
			(*C.uchar)(unsafe.Pointer(&sig[0])), check)
		zero32(&nb)
		switch {
		case r == 0:
			return [64]byte{}, errors.New("libsecp256k1: cannot sign")
		case challengeOverflows(&sig, &k.secp.pub, msg):
			// btcec refuses e ≥ n and tries its next nonce, where BIP-340
			// and libsecp256k1 reduce e mod n (odds about 2⁻¹²⁸).
			continue
		case r < 0:
			return [64]byte{}, errSignFault
		}
		return sig, nil
	}
}

// challengeOverflows: the BIP-340 challenge e of sig, hashed as btcec
// hashes it, is at or above the curve order.
func challengeOverflows(sig *[64]byte, pub, msg *[32]byte) bool {
	e := chainhash.TaggedHash(chainhash.TagBIP0340Challenge, sig[:32], pub[:], msg[:])
	var s btcec.ModNScalar
	return s.SetBytes((*[32]byte)(e)) != 0
}

// zero32 zeroes a secret (btcec's zeroArray).
func zero32(b *[32]byte) { *b = [32]byte{} }
