//go:build !(libsecp256k1 && cgo)

package signing

var schnorrSigners = []schnorrSigner{{name: "btcec", sign: signBtcec}}

// secpKey is libsecp256k1's parsed key pair, only in that build.
type secpKey struct{}

func newSecpKey([]byte, string) (secpKey, error) { return secpKey{}, nil }
