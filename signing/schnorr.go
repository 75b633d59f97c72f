package signing

import (
	"sync"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
)

// SchnorrVerifier is one implementation of BIP-340 verification: pub is a
// 32-byte x-only key, msg the 32-byte message (a Nostr event id, an audit
// checkpoint's digest), sig 64 bytes. Any other length does not verify.
type SchnorrVerifier struct {
	Name   string
	Verify func(pub, msg, sig []byte) bool
}

// schnorrVerifiers lists the compiled-in implementations, the one in use
// first: pure Go (btcec) always, libsecp256k1 too when built with
// -tags libsecp256k1 (schnorr_libsecp256k1.go puts itself in front).
var schnorrVerifiers = []SchnorrVerifier{{Name: "btcec", Verify: verifyBtcec}}

// VerifySchnorr is the BIP-340 check behind every Nostr event, receipt and
// audit checkpoint the gateway and its clients believe.
func VerifySchnorr(pub, msg, sig []byte) bool { return schnorrVerifiers[0].Verify(pub, msg, sig) }

// SchnorrLibrary names the implementation VerifySchnorr and Key.Sign use
// ("btcec" or "libsecp256k1": one build tag switches both), for `signoff
// bench` and the startup log.
func SchnorrLibrary() string { return schnorrVerifiers[0].Name }

// SchnorrVerifiers returns every compiled-in implementation, the one in
// use first, so a benchmark can put them side by side.
func SchnorrVerifiers() []SchnorrVerifier {
	return append([]SchnorrVerifier(nil), schnorrVerifiers...)
}

func verifyBtcec(pub, msg, sig []byte) bool {
	if len(pub) != 32 || len(msg) != 32 || len(sig) != 64 {
		return false
	}
	key := btcecKeys.get(pub)
	if key == nil {
		var err error
		if key, err = schnorr.ParsePubKey(pub); err != nil {
			return false
		}
	}
	s, err := schnorr.ParseSignature(sig)
	if err != nil || !s.Verify(msg, key) {
		return false
	}
	btcecKeys.put(pub, key)
	return true
}

var btcecKeys = keyCache[*btcec.PublicKey]{}

// keyCache keeps parsed public keys (lifting x to a point costs a square
// root) of keys that have signed something valid: a persona's few members
// vote again and again. Only verified keys enter, and the cache is emptied
// when full, so a flood of events under fresh keys costs no memory.
type keyCache[K any] struct {
	mu sync.RWMutex
	m  map[[32]byte]K
}

const keyCacheMax = 4096

func (c *keyCache[K]) get(pub []byte) K {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[[32]byte(pub)]
}

func (c *keyCache[K]) put(pub []byte, k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[[32]byte(pub)]; ok {
		return
	}
	if c.m == nil || len(c.m) >= keyCacheMax {
		c.m = make(map[[32]byte]K)
	}
	c.m[[32]byte(pub)] = k
}
