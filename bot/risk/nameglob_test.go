package risk

import (
	"path"
	"testing"
)

// nameMatch is path.Match for every pattern and name, shortcut or not.
func TestNameMatchIsPathMatch(t *testing.T) {
	patterns := []string{"*_TOKEN", "TOKEN", "*_TOKEN_*", "*SECRET*", "NSEC*", "*", "**", "*a*b*", "a?c", "[ab]*", "x\\*", "*\\", "", "a*", "*a"}
	names := []string{"", "GH_TOKEN", "TOKEN", "MY_TOKEN_X", "A_SECRET_B", "NSEC1", "a/b_TOKEN", "x/SECRET", "abc", "aXb", "x*", "*", "a", "_TOKEN", "/"}
	for _, p := range patterns {
		for _, n := range names {
			want, _ := path.Match(p, n)
			if got := nameMatch(p, n); got != want {
				t.Errorf("nameMatch(%q, %q) = %v, path.Match %v", p, n, got, want)
			}
		}
	}
}

func FuzzNameMatch(f *testing.F) {
	f.Add("*_TOKEN*", "GH_TOKEN")
	f.Fuzz(func(t *testing.T, p, n string) {
		want, _ := path.Match(p, n) // a bad pattern matches nothing
		if got := nameMatch(p, n); got != want {
			t.Fatalf("nameMatch(%q, %q) = %v, path.Match %v", p, n, got, want)
		}
	})
}
