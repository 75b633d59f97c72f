// Package redis is the bot.Store on Redis (go-redis UniversalClient: one
// server, Sentinel or Cluster) and on the embedded in-process miniredis that
// `signoff serve` uses by default. The same code and the same Lua scripts run
// on both.
//
// Every key of a request carries its id as a hash tag ({id}) so a request's
// keys share a Cluster slot; each vote is one script call, so any number of
// gateways may tally the same request and it is decided exactly once.
// Decisions are published on one channel: a gateway needs one subscription
// for all its waiters.
package redis
