// Package configs holds signoff's example and default configuration and
// embeds it, so the binary runs on a fresh machine with no files beside it.
package configs

import "embed"

// Personas holds the example personas (personas/*.yaml).
//
//go:embed personas/*.yaml
var Personas embed.FS
