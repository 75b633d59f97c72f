// Package rules holds signoff's default configuration data that is embedded
// in the binary: the risk rules read by bot/risk. It exists only because
// go:embed cannot reach files outside a package's own directory.
package rules

import _ "embed"

// Default is the default risk rules file (risk.yaml), the data that
// bot/risk.Default classifies with. A rules file given by path replaces it.
//
//go:embed risk.yaml
var Default []byte
