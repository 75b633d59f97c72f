//go:build libsecp256k1 && cgo

package signing

/*
#cgo LDFLAGS: -lsecp256k1
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

static secp256k1_context *signoff_ctx;

// One context for the process, used only to verify (nothing secret goes
// through it, so it needs no randomization).
static int signoff_init(void) {
	signoff_ctx = secp256k1_context_create(SECP256K1_CONTEXT_VERIFY);
	return signoff_ctx != NULL;
}

// Parse the x-only key into out (64 bytes, opaque); 0 if it is not on the
// curve.
static int signoff_parse(const unsigned char *pub32, secp256k1_xonly_pubkey *out) {
	return secp256k1_xonly_pubkey_parse(signoff_ctx, out, pub32);
}

static int signoff_verify(const secp256k1_xonly_pubkey *key, const unsigned char *msg32, const unsigned char *sig64) {
	return secp256k1_schnorrsig_verify(signoff_ctx, sig64, msg32, 32, key);
}

// Parse and verify in one call: one cgo crossing for an uncached key.
static int signoff_parse_verify(const unsigned char *pub32, const unsigned char *msg32, const unsigned char *sig64, secp256k1_xonly_pubkey *out) {
	if (!secp256k1_xonly_pubkey_parse(signoff_ctx, out, pub32)) return 0;
	return secp256k1_schnorrsig_verify(signoff_ctx, sig64, msg32, 32, out);
}
*/
import "C"

import "unsafe"

func init() {
	if C.signoff_init() == 0 {
		panic("libsecp256k1: cannot create a verification context")
	}
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
		return C.signoff_verify((*C.secp256k1_xonly_pubkey)(unsafe.Pointer(key)), m, s) == 1
	}
	key := new(xonlyKey)
	if C.signoff_parse_verify((*C.uchar)(unsafe.Pointer(&pub[0])), m, s, (*C.secp256k1_xonly_pubkey)(unsafe.Pointer(key))) != 1 {
		return false
	}
	secpKeys.put(pub, key)
	return true
}
