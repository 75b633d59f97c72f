// Package readiness keeps a replica honest about its store. A Redis that
// restarts without persistence (or fails over to an empty replica, or is
// flushed) comes back answering PING but holding nothing: no personas, so
// every request would be refused as an unknown persona, and none of the
// requests that were pending. The Keeper notices within one check (a
// marker written after the personas is gone), makes /readyz fail with the
// reason, and loads the personas again. Requests lost with the old data
// stay lost: their waiters are told "unknown request", never an approval.
// Other parts add their own reasons to fail /readyz (Keeper.Also): tokens
// lost with the store, an audit log cut shorter than its witness.
//
// It owns the readiness answer and the reload; it must not import the
// adapters, quorum/redis or cmd: the store is the small interface below.
package readiness
