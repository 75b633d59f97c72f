package signing

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
)

type bip340Vector struct {
	index         string
	pub, msg, sig []byte
	valid         bool
	comment       string
}

// bip340Vectors reads the official BIP-340 vectors (bitcoin/bips,
// bip-0340/test-vectors.csv, the 32-byte-message ones).
func bip340Vectors(t testing.TB) []bip340Vector {
	f, err := os.Open("testdata/bip340-vectors.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []bip340Vector
	for _, r := range rows[1:] {
		dec := func(s string) []byte {
			b, err := hex.DecodeString(s)
			if err != nil {
				t.Fatalf("vector %s: %v", r[0], err)
			}
			return b
		}
		out = append(out, bip340Vector{index: r[0], pub: dec(r[2]), msg: dec(r[4]), sig: dec(r[5]), valid: r[6] == "TRUE", comment: r[7]})
	}
	if len(out) < 15 {
		t.Fatalf("read %d BIP-340 vectors, want 15", len(out))
	}
	return out
}

func TestSchnorrLibraryInUse(t *testing.T) {
	if got := SchnorrLibrary(); got != wantSchnorrLibrary {
		t.Fatalf("VerifySchnorr uses %q, want %q for this build", got, wantSchnorrLibrary)
	}
	if got := schnorrSigners[0].name; got != wantSchnorrLibrary {
		t.Fatalf("Key.Sign uses %q, want %q for this build", got, wantSchnorrLibrary)
	}
}

// Every compiled-in implementation gives every official vector its
// expected result, twice: the second pass goes through the key cache.
func TestVerifySchnorrBIP340Vectors(t *testing.T) {
	vs := bip340Vectors(t)
	// Derived from the vectors: vector 1's good signature under vector 2's
	// key, and each length one short.
	v1, v2 := vs[1], vs[2]
	extra := []bip340Vector{
		{index: "wrong key", pub: v2.pub, msg: v1.msg, sig: v1.sig},
		{index: "short key", pub: v1.pub[:31], msg: v1.msg, sig: v1.sig},
		{index: "short msg", pub: v1.pub, msg: v1.msg[:31], sig: v1.sig},
		{index: "short sig", pub: v1.pub, msg: v1.msg, sig: v1.sig[:63]},
		{index: "empty", pub: nil, msg: nil, sig: nil},
	}
	for _, impl := range SchnorrVerifiers() {
		for pass := range 2 {
			for _, v := range append(vs, extra...) {
				t.Run(fmt.Sprintf("%s/pass%d/%s", impl.Name, pass, v.index), func(t *testing.T) {
					if got := impl.Verify(v.pub, v.msg, v.sig); got != v.valid {
						t.Errorf("Verify = %v, want %v (%s)", got, v.valid, v.comment)
					}
				})
			}
		}
	}
}

// The gateway's own path: an event signed by a vector's key (off-curve
// key, s ≥ n) is refused by VerifyEvent whatever the library.
func TestVerifyEventRefusesVectorForgeries(t *testing.T) {
	vs := bip340Vectors(t)
	for _, v := range []bip340Vector{vs[5], vs[13], vs[14]} {
		ev := ntEvent(nil)
		ev.PubKey = hex.EncodeToString(v.pub)
		h := sha256.Sum256(ev.Serialize())
		ev.ID = hex.EncodeToString(h[:])
		ev.Sig = hex.EncodeToString(v.sig)
		if _, err := VerifyEvent(ntJSON(ev)); err == nil {
			t.Errorf("vector %s (%s): VerifyEvent accepted it", v.index, v.comment)
		}
	}
}

// fuzzKey derives a key from seed (never zero).
func fuzzKey(seed []byte) *btcec.PrivateKey {
	h := sha256.Sum256(seed)
	k, _ := btcec.PrivKeyFromBytes(h[:])
	return k
}

// FuzzSchnorrAgree: for random keys and messages, every implementation
// accepts the signature, rejects it tampered (a flipped bit of sig, msg
// or key), and all agree on arbitrary bytes.
func FuzzSchnorrAgree(f *testing.F) {
	f.Add([]byte("alice"), []byte("a message"), uint(0), []byte{})
	f.Add([]byte("bob"), []byte{}, uint(511), bytes.Repeat([]byte{0xff}, 128))
	vs := bip340Vectors(f)
	for _, v := range vs {
		f.Add([]byte(v.index), v.msg, uint(len(v.index)*37), append(append(append([]byte{}, v.pub...), v.msg...), v.sig...))
	}
	impls := SchnorrVerifiers()
	f.Fuzz(func(t *testing.T, seed, text []byte, flip uint, raw []byte) {
		priv := fuzzKey(seed)
		msg := sha256.Sum256(text)
		s, err := schnorr.Sign(priv, msg[:])
		if err != nil {
			t.Fatal(err)
		}
		pub := schnorr.SerializePubKey(priv.PubKey())
		sig := s.Serialize()
		for _, impl := range impls {
			if !impl.Verify(pub, msg[:], sig) {
				t.Fatalf("%s refuses a good signature", impl.Name)
			}
		}
		// One bit flipped in sig (512 bits), msg (256) or pub (256).
		bit := flip % (512 + 256 + 256)
		tp, tm, ts := bytes.Clone(pub), bytes.Clone(msg[:]), bytes.Clone(sig)
		switch {
		case bit < 512:
			ts[bit/8] ^= 1 << (bit % 8)
		case bit < 768:
			tm[(bit-512)/8] ^= 1 << (bit % 8)
		default:
			tp[(bit-768)/8] ^= 1 << (bit % 8)
		}
		for _, impl := range impls {
			if impl.Verify(tp, tm, ts) {
				t.Fatalf("%s accepts a signature with bit %d flipped", impl.Name, bit)
			}
		}
		// Arbitrary bytes: a key, a message, a signature (mostly invalid).
		if len(raw) >= 128 {
			p, m, g := raw[:32], raw[32:64], raw[64:128]
			want := impls[0].Verify(p, m, g)
			for _, impl := range impls[1:] {
				if got := impl.Verify(p, m, g); got != want {
					t.Fatalf("%s says %v, %s says %v for key %x msg %x sig %x", impls[0].Name, want, impl.Name, got, p, m, g)
				}
			}
		}
	})
}

// BenchmarkVerify puts every compiled-in implementation side by side
// (-tags libsecp256k1 adds libsecp256k1 to pure-Go btcec): a key seen
// before (its parsed point cached: a persona's members) and a fresh key
// each time (more keys than the cache holds).
func BenchmarkVerify(b *testing.B) {
	type signed struct{ pub, msg, sig []byte }
	sign := func(i int) signed {
		priv := fuzzKey([]byte(fmt.Sprint("bench", i)))
		msg := sha256.Sum256([]byte(fmt.Sprint("event", i)))
		s, err := schnorr.Sign(priv, msg[:])
		if err != nil {
			b.Fatal(err)
		}
		return signed{schnorr.SerializePubKey(priv.PubKey()), msg[:], s.Serialize()}
	}
	one := sign(0)
	var fresh []signed
	for _, impl := range SchnorrVerifiers() {
		b.Run(impl.Name+"/cached-key", func(b *testing.B) {
			for b.Loop() {
				if !impl.Verify(one.pub, one.msg, one.sig) {
					b.Fatal("verify")
				}
			}
		})
		b.Run(impl.Name+"/fresh-key", func(b *testing.B) {
			if fresh == nil {
				for i := range keyCacheMax + 1 {
					fresh = append(fresh, sign(i))
				}
			}
			i := 0
			for b.Loop() {
				s := fresh[i%len(fresh)]
				i++
				if !impl.Verify(s.pub, s.msg, s.sig) {
					b.Fatal("verify")
				}
			}
		})
	}
}

// An attacker who has seen alice's key verify (so it is cached) still
// cannot pass a signature alice did not make under it.
func TestForgeryUnderCachedKeyIsRefused(t *testing.T) {
	alice := fuzzKey([]byte("alice"))
	msg := sha256.Sum256([]byte("approve"))
	s, _ := schnorr.Sign(alice, msg[:])
	pub, sig := schnorr.SerializePubKey(alice.PubKey()), s.Serialize()
	mallory := fuzzKey([]byte("mallory"))
	forged, _ := schnorr.Sign(mallory, msg[:])
	other := sha256.Sum256([]byte("deny"))
	for _, impl := range SchnorrVerifiers() {
		if !impl.Verify(pub, msg[:], sig) {
			t.Fatalf("%s: alice's own signature refused", impl.Name)
		}
		if impl.Verify(pub, msg[:], forged.Serialize()) {
			t.Errorf("%s: mallory's signature passes under alice's cached key", impl.Name)
		}
		if impl.Verify(pub, other[:], sig) {
			t.Errorf("%s: alice's signature passes for another message", impl.Name)
		}
	}
}

// A flood of events under fresh keys never holds more than keyCacheMax
// parsed keys.
func TestFreshKeyFloodIsBounded(t *testing.T) {
	var c keyCache[*int]
	for i := range 3*keyCacheMax + 7 {
		var pub [32]byte
		pub[0], pub[1], pub[2] = byte(i), byte(i>>8), byte(i>>16)
		c.put(pub[:], &i)
		if len(c.m) > keyCacheMax {
			t.Fatalf("after %d keys the cache holds %d, want ≤ %d", i+1, len(c.m), keyCacheMax)
		}
	}
}

// signKeys are keys to sign with: edge scalars (1, 3 — BIP-340 vector
// 0's — and n−1, whose point is −G) and count derived ones, with at
// least a quarter of each public-key Y parity among them (BIP-340 signs
// an odd-Y key's messages with its secret negated).
func signKeys(t testing.TB, count int) []*Key {
	t.Helper()
	hexes := []string{
		strings.Repeat("0", 63) + "1",
		strings.Repeat("0", 63) + "3",
		"fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140",
	}
	for i := range count {
		h := sha256.Sum256([]byte(fmt.Sprint("sign key ", i)))
		hexes = append(hexes, hex.EncodeToString(h[:]))
	}
	var keys []*Key
	odd := 0
	for _, h := range hexes {
		k, err := ParseKey(h)
		if err != nil {
			t.Fatalf("ParseKey(%s): %v", h, err)
		}
		if k.priv.PubKey().SerializeCompressed()[0] == 0x03 {
			odd++
		}
		keys = append(keys, k)
	}
	if odd < len(keys)/4 || len(keys)-odd < len(keys)/4 {
		t.Fatalf("%d of %d keys have an odd Y: want both parities", odd, len(keys))
	}
	return keys
}

// signMessages are messages to sign: all zeros, all ones, and count
// derived from seed.
func signMessages(seed string, count int) [][32]byte {
	var ff [32]byte
	for i := range ff {
		ff[i] = 0xff
	}
	msgs := [][32]byte{{}, ff}
	for i := range count {
		msgs = append(msgs, sha256.Sum256([]byte(fmt.Sprint(seed, i))))
	}
	return msgs
}

// signMismatches signs each message with each key, checked and unchecked,
// and counts the signatures that are not btcec's schnorr.Sign's bytes.
func signMismatches(t testing.TB, sign func(*Key, *[32]byte) ([64]byte, error), keys []*Key, msgs [][32]byte) (n int, first string) {
	t.Helper()
	for _, k := range keys {
		for _, msg := range msgs {
			want, err := schnorr.Sign(k.priv, msg[:])
			if err != nil {
				t.Fatal(err)
			}
			for _, kk := range []*Key{k, k.Unchecked()} {
				got, err := sign(kk, &msg)
				if err != nil {
					t.Fatalf("key %s (fast %v) msg %x: %v", k.public, kk.fast, msg, err)
				}
				if !bytes.Equal(got[:], want.Serialize()) {
					if n == 0 {
						first = fmt.Sprintf("key %s (odd Y %v, fast %v) msg %x: got %x, want %x", k.public, k.oddY, kk.fast, msg, got, want.Serialize())
					}
					n++
				}
			}
		}
	}
	return n, first
}

// Every compiled-in signer makes btcec's schnorr.Sign's bytes, over keys
// of both parities and many messages: what the golden vectors and a
// receipt sealed twice rely on.
func TestSignMatchesBtcec(t *testing.T) {
	keys, msgs := signKeys(t, 200), signMessages("sign message ", 8)
	for _, s := range schnorrSigners {
		t.Run(s.name, func(t *testing.T) {
			if n, first := signMismatches(t, s.sign, keys, msgs); n > 0 {
				t.Errorf("%d signatures differ from btcec's; first: %s", n, first)
			}
		})
	}
}

// The official vectors' keys: each parses to its vector's public key, and
// every signer's signature (btcec's nonce, not the vectors' aux_rand, so
// not the vectors' signatures) is btcec's and verifies with every
// verifier under that public key.
func TestSignBIP340VectorKeys(t *testing.T) {
	f, err := os.Open("testdata/bip340-vectors.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var keys []*Key
	for _, r := range rows[1:] {
		if r[1] == "" {
			continue // a verification-only vector
		}
		k, err := ParseKey(r[1])
		if err != nil {
			t.Fatalf("vector %s: %v", r[0], err)
		}
		if k.PublicKey() != strings.ToLower(r[2]) {
			t.Fatalf("vector %s: public key %s, want %s", r[0], k.PublicKey(), strings.ToLower(r[2]))
		}
		keys = append(keys, k)
	}
	if len(keys) < 4 {
		t.Fatalf("%d vectors with a secret key, want 4", len(keys))
	}
	msgs := signMessages("vector message ", 4)
	for _, s := range schnorrSigners {
		t.Run(s.name, func(t *testing.T) {
			if n, first := signMismatches(t, s.sign, keys, msgs); n > 0 {
				t.Errorf("%d signatures differ from btcec's; first: %s", n, first)
			}
			for _, k := range keys {
				pub, _ := hex.DecodeString(k.public)
				for _, msg := range msgs {
					sig, err := s.sign(k, &msg)
					if err != nil {
						t.Fatal(err)
					}
					for _, v := range SchnorrVerifiers() {
						if !v.Verify(pub, msg[:], sig[:]) {
							t.Errorf("%s refuses %s's signature by %s of %x", v.Name, s.name, k.public, msg)
						}
					}
				}
			}
		})
	}
}

// BenchmarkSign is one Nostr event signed by a parsed key, by each
// compiled-in signer: checked as the gateway signs a request's event and
// a receipt, unchecked as the bench client signs its votes (the same
// bytes without BIP-340's fault check).
func BenchmarkSign(b *testing.B) {
	k := mustKey("3333333333333333333333333333333333333333333333333333333333333333")
	ev := ntEvent(nil)
	for _, s := range schnorrSigners {
		for _, c := range []struct {
			name string
			k    *Key
		}{{"checked", k}, {"unchecked", k.Unchecked()}} {
			b.Run(s.name+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					h := sha256.Sum256(ev.Serialize())
					if _, err := s.sign(c.k, &h); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
