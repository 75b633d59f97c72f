// Package rules holds signoff's default risk rules, embedded in the binary:
// one YAML pack per family of programs (core.yaml holds the shared
// sections and documents the format). bot/risk reads them. The package
// exists only because go:embed cannot reach files outside a package's own
// directory.
package rules

import "embed"

// Packs holds the default packs (*.yaml). A directory of packs given by
// path overrides them file by file; a single rules file replaces them.
//
//go:embed *.yaml
var Packs embed.FS
