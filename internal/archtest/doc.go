// Package archtest holds the test that keeps the import rules of
// docs/architecture.md true: its layer table is read as data, and every
// package of the module is checked against its row with `go list`. It has
// no code of its own; the rules live in the doc, the check here.
package archtest
