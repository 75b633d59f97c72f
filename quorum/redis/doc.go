// Package redis is the bot.Store on Redis (go-redis UniversalClient: one
// server, Sentinel or Cluster) and on the embedded in-process miniredis that
// `signoff serve` uses by default. The same code and the same Lua scripts run
// on both.
//
// Every key of a request carries its id as a hash tag ({id}) so a request's
// keys share a Cluster slot; each vote is one script call, so any number of
// gateways may tally the same request and it is decided exactly once.
//
// Changes are published on three channels, and a gateway needs one
// subscription, to the last two, for all its waiters (WatchNotices):
//
//   - PREFIX:decided — each change's bare id (a vote stored, a decision, a
//     receipt), as replicas of earlier versions and Watch follow it;
//   - PREFIX:decided:final — each decision's id, once, and nothing else;
//   - PREFIX:decided:notice — each other change, one message a change: a
//     vote that left the request pending carries the vote (its index and
//     the line stored, signed with the request's notice key), so a replica
//     holding the request as it was just before answers its waiters with
//     no read; messages added; anything else, to be read (notice.go).
//
// Tokens made and revoked are published, their ids, on PREFIX:tokens:changed
// by the scripts that make the change; while a gateway follows it
// (WatchTokens) it authenticates from memory (tokens.go).
package redis
