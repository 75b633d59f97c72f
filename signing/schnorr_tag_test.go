//go:build !libsecp256k1

package signing

const wantSchnorrLibrary = "btcec"
