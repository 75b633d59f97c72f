// Package grants owns "yes, and don't ask again" (docs/design.md#permission-rules-modes-and-grants): what a
// grant covers (its scope, worked out from the call people were asked
// about), whether a later call is covered, making a grant when a request
// is approved with ♾️ / Always / `approve --always` by an electorate that
// may grant, and the small Store interface grants live in (Redis only:
// quorum/redis/grants.go).
//
// A scope never widens what people saw: the same program and subcommand
// with any arguments (a single plain command; anything else is the exact
// command line), the same tool, or the same host and port — always in the
// same workspace, never at a higher risk level than the call approved, and
// never for a call with a risk reason the approved call did not have.
//
// It imports bot and mvdan.cc/sh only; it must not import bot/permissions
// (which decides with it) or any store or adapter.
package grants
