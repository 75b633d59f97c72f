// Package nostr is signoff's Nostr relays adapter. It publishes a request
// to relays — the request's own kind-1 event as signed by the gateway
// (mode "note"), a NIP-28 channel message (kind 42 under the channel's root
// event, mode "nip28") or a NIP-29 group message (kind 9 with an `h` tag,
// mode "nip29") — listens on every relay it knows for NIP-25 reactions
// (kind 7) naming a pending request's events, and hands each one, verified
// by signing.ParseReaction exactly as POST /v1/nostr/events does, to a
// bot.VoteSink. When a request is decided it publishes a reply stating the
// outcome under every event it posted and stops listening for it.
//
// Relays are not trusted: every reaction is verified here (id, signature,
// kind, replay window) whatever the relay or go-nostr's client thought of
// it, and one that fails is logged and dropped. The same reaction arriving
// from several relays is cast once (the store dedups on the event id too).
//
// Each relay has a connection loop of its own (not go-nostr's SimplePool,
// which resubscribes with since=now after a reconnect and so would miss
// reactions made while it was away): it reconnects with jittered
// exponential backoff and resubscribes with since = the oldest watched
// request's created_at minus a margin, so over-fetching is normal and
// deduplicated. The websocket client is a small one of this package
// (client.go: gobwas/ws plus go-nostr's envelopes and filters), because
// go-nostr v0.38.2's Relay races on every close and reports a publish as
// accepted when the connection drops before the relay's OK. A NIP-09 deletion never undoes a vote: kind 5 is not
// subscribed to.
//
// What the adapter remembers about its own posts (mode, relays, channel
// root or group) lives in memory: after a restart, pending requests are
// found again through Config.Pending and their replies fall back to kind-1
// notes on every known relay.
//
// The package speaks package bot's types and uses package signing for
// keys and verification; it imports no other package of this module.
package nostr
