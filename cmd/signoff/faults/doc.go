// Package faults holds only tests: they build the signoff binary once,
// start real redis-server processes (single, persistent or not, and a
// three-master Cluster) and several `signoff serve` processes on loopback
// ports, and break them — Redis restarted between votes, a replica killed
// with SIGKILL, the same reaction delivered to every replica at once, a
// burst of forged events. Each test ends by checking the audit trail
// (verify clean, every request decided once, no decision without its
// record). The tests skip, saying why, when redis-server is not
// installed. Nothing here is imported by the product.
package faults
