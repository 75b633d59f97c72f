// Package netpolicy owns the network policy of docs/design.md#network-access-requests-and-policy-revisions: the doors a
// person opened for an agent's traffic through the egress proxy.
//
// It holds the policy model (hosts: entries of host, port, access, methods,
// paths, programs), its YAML parser with file:line problems, matching a
// destination against it, the narrowest rule an approval adds (or the entry
// it widens), the diff between two revisions, the boundary (what may ever
// be approved), the comment-keeping edit of a policy file for --save, and
// the Service that turns network requests into gateway requests and their
// approvals into numbered revisions.
//
// Pure logic (policy.go, host.go, parse.go, derive.go, diff.go,
// boundary.go, save.go) does no I/O. The Service talks to the gateway and a
// store through the small interfaces it declares. It imports bot and
// nothing else of the module: not the HTTP API, not quorum/redis, not the
// proxy.
package netpolicy
