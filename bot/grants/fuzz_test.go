package grants_test

import (
	"testing"
	"time"

	"github.com/signoff/signoff/bot/grants"
)

// FuzzGrantScope: any command line an agent sends gets a scope without
// panicking, the scope covers the line it was made from, and it has words
// for the card.
func FuzzGrantScope(f *testing.F) {
	for _, s := range []string{
		"ssh prod sudo systemctl restart nginx", "terraform destroy -target=module.scratch", "kubectl exec api -- rm /tmp/x",
		"env A=1 B=2 nice -n 5 timeout 60 rm -rf build", "npx -y @scope/pkg@1.2 run", "docker exec -u root web sh -c 'id'",
		"ssh -p 22 prod -- ls", "kubectl -n prod delete pod x --grace-period 0", "rm -- -rf", "sudo", "ssh prod", "a=b c",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		s := grants.ScopeOf(bash(line), time.Hour)
		if s == nil {
			return
		}
		if s.Text() == "" {
			t.Fatalf("%q: empty text", line)
		}
		if !grants.Covers(*s, bash(line)) {
			t.Fatalf("%q: its own scope does not cover it: %s", line, s.Text())
		}
	})
}
