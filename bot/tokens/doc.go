// Package tokens owns signoff's bearer tokens: their format, the keyed
// hash that is all the store ever keeps of them, the scopes a token may
// carry and the plain words a person is shown for each, persona binding,
// expiry, and extension manifests (signoff.json) with their consent block.
// It also owns who may make them: Service holds every rule for making and
// revoking tokens (an admin token, or a persona owner's signed call,
// NIP-98, parsed by ParseHTTPAuth), the mark that closes the API for good
// once a token exists, and TOKENS LOST.
//
// A token is "sgn_<id>_<secret>". The id finds the record; the whole
// token, hashed with HMAC-SHA256 under a server secret that is never in
// the store, is compared in constant time with the record's hash. So a
// dump of Redis yields no usable token, and someone who can write to Redis
// still cannot forge one (they lack the secret).
//
// It imports only bot (error codes, personas, the auditor) and signing
// (to verify a Nostr event). It must not import httpapi, the store
// (quorum/redis) or cmd: the HTTP layer, the store and the command use
// its types and its Service.
package tokens
