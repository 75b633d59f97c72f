// Package sandbox holds the default walls of `signoff run`
// (walls.yaml), embedded in the binary. bot/sandbox reads them. The
// package exists only because go:embed cannot reach files outside a
// package's own directory.
package sandbox

import _ "embed"

// Walls is the default walls file.
//
//go:embed walls.yaml
var Walls []byte
