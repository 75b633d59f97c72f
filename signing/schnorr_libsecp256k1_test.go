//go:build libsecp256k1

package signing

const wantSchnorrLibrary = "libsecp256k1"
