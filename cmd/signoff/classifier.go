package main

import (
	"fmt"

	"github.com/signoff/signoff/bot/risk"
)

// loadClassifier returns the risk classifier: the rules file when named,
// else the embedded default.
func loadClassifier(path string) (*risk.Classifier, error) {
	if path == "" {
		return risk.Default(), nil
	}
	rules, err := risk.LoadRules(path)
	if err != nil {
		return nil, fmt.Errorf("SIGNOFF_RULES: %w", err)
	}
	return risk.New(rules), nil
}
