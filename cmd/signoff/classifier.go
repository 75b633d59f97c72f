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

// configAndClassifier loads the configuration and the classifier it names,
// as every command that classifies needs both.
func configAndClassifier() (*config, *risk.Classifier, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, nil, err
	}
	c, err := loadClassifier(cfg.Rules)
	if err != nil {
		return nil, nil, err
	}
	return cfg, c, nil
}
