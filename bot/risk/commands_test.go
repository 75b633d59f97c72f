package risk_test

import (
	"slices"
	"testing"

	"github.com/signoff/signoff/bot/risk"
)

// TestCommandsSeeThroughWrappers: Commands lists what would run, the
// wrappers' commands included, for rules to match.
func TestCommandsSeeThroughWrappers(t *testing.T) {
	c := risk.Default()
	for cmd, want := range map[string]string{
		"sudo git push origin main":        "git push origin main",
		"bash -c 'git push --force'":       "git push --force",
		"env FOO=1 nohup git push &":       "git push",
		"timeout 5 sudo -u bob git push":   "git push",
		"signoff exec -- git push":         "git push",
		"echo $(git push)":                 "git push",
		"find . -name x -exec rm -rf {} +": "rm -rf {}",
		"ls && sh -c \"sudo git push\"":    "git push",
		"git status":                       "git status",
	} {
		got := c.Commands(cmd)
		if !slices.Contains(got, want) {
			t.Errorf("Commands(%q) = %q, want it to hold %q", cmd, got, want)
		}
	}
}
