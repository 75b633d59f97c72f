// Package bot is signoff's domain and its gateway: the types every other
// package speaks (Request, Vote, Persona, Identity, MessageRef, Error), the
// contracts the gateway needs from the outside (Store, Channel, Signer,
// Classifier, Auditor) and the Gateway that runs a request's lifecycle:
// submit → classify → post → wait → decide → notify → edit messages, and
// Record, which audits a caution action that ran without asking.
//
// It imports nothing from this module: storage, platforms and signatures
// are reached only through the small interfaces declared here, and cmd/signoff
// wires the real ones in.
package bot
