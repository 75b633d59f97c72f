// Package bot is signoff's domain and, for now, its gateway: the types
// every other package speaks (Request, Vote, Persona, Identity,
// MessageRef, Error), the contract the gateway needs from the outside
// (contracts.go: Store, Outbox, Channel, Signer, AuditLog, Classifier) and
// the Gateway that runs a request's lifecycle — check, request, post,
// tally, outbox, deliver (docs/architecture.md).
//
// The contract is required, not discovered: every capability the gateway
// uses is a method of an interface it is given, so a store or a fake
// missing one does not compile, and Start refuses a gateway missing a
// required part, naming it. What is truly optional is a field of its own.
//
// It imports nothing from this module: storage, platforms and signatures
// are reached only through the interfaces declared here, and cmd/signoff
// wires the real ones in (docs/architecture.md's test holds it to that).
package bot
