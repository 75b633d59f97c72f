// Package bench is the load generator behind `signoff bench`: it drives a
// running gateway through its real HTTP API — POST /v1/requests, the long
// poll GET /v1/requests/{id}?wait=, and signed NIP-25 reactions to POST
// /v1/nostr/events, built as `signoff approve` builds them — and measures,
// in the same run, the physical floor of a vote beside it: one loopback
// HTTP round trip to a trivial handler, one verification of a reaction by
// the function the gateway calls (signing.ParseReaction), and one Redis
// round trip (PING) with the gateway's client library. Beside the floor,
// on the same server, it measures those pieces done in series in one
// handler and the design's minimum vote: verify, then the audited vote
// script on a scratch request of its own (minimum.go) — what any gateway
// built to this design must do for a vote, so a run shows how much of the
// vote path's distance from the floor is the design's and how much is
// this gateway's. A votes phase (votes.go) times votes alone, on
// requests made and votes signed before its window, each answered in it
// as in a lifecycle.
//
// It owns the measurement and its report, not the gateway: cmd/signoff
// starts (or names) the gateway and hands this package its URL, the
// voters' keys and a Redis client. It must not import cmd or reach into a
// gateway's memory; everything it learns comes over the API or from the
// store's audit stream, so it measures what a client sees.
package bench
