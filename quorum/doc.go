// Package quorum owns who may decide: persona files (parsed and checked
// with line-accurate problems), the judging of a voter against a persona,
// and the tally, as pure functions with no I/O. Its subpackage redis keeps
// the same rules atomically in Redis.
//
// It imports bot, and bot/permissions to parse a persona's permission
// rules and workspaces (quorum/permissions.go) with the parser /v1/check
// decides with; nothing else from this module.
package quorum
