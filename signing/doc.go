// Package signing owns every signature signoff makes or checks: the
// gateway's and people's Nostr keys, NIP-01 event verification and NIP-25
// reactions, Slack request HMACs, Discord interaction Ed25519 signatures,
// and the signed, hash-chained audit log.
//
// It speaks the domain types of package bot; the only other package of
// this module it imports is bot/steptrace, which imports nothing and lets
// the bench time the audit log's steps. Every check works on the raw bytes, before anything is
// parsed or trusted.
package signing
