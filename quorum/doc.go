// Package quorum owns who may decide: persona files (parsed and checked
// with line-accurate problems), the judging of a voter against a persona,
// and the tally, as pure functions with no I/O. Its subpackage redis keeps
// the same rules atomically in Redis.
//
// It imports bot and nothing else from this module.
package quorum
