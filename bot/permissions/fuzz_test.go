package permissions_test

import (
	"testing"

	"github.com/signoff/signoff/bot/permissions"
)

func FuzzParseFile(f *testing.F) {
	for _, s := range []string{"bash:\n  \"git *\": allow\n", "\"*\": deny\n", "edit: [x]\n", "a: !0\n", "- 1\n", "bash:\n  x: {y: z}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rules, _ := permissions.ParseFile("f.yaml", b)
		for _, r := range rules {
			if r.Effect != "allow" && r.Effect != "deny" && r.Effect != "ask" {
				t.Errorf("rule with effect %q", r.Effect)
			}
		}
	})
}

func FuzzMatch(f *testing.F) {
	f.Add("git *", "git push origin main")
	f.Add("*a*b*c*", "xxaxxbxxc")
	f.Fuzz(func(t *testing.T, p, s string) {
		if permissions.Match(p, s) && !containsStar(p) && p != s {
			t.Errorf("pattern %q without a wildcard matched %q", p, s)
		}
		if permissions.Match(s, s) != true && !containsStar(s) {
			t.Errorf("%q does not match itself", s)
		}
	})
}

func containsStar(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '*' {
			return true
		}
	}
	return false
}
