package quorum_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/quorum"
)

const permissionsPersona = `name: demo
owner:
  name: alice
  slack: U01ALICE
mode: auto
grantTTL: 2h
caution: allow
reviewer:
  url: http://127.0.0.1:9999/review
  timeout: 3s
permissions:
  "*": ask
  bash:
    "git *": allow
    "git push *": deny
  edit:
    "docs/*": allow
workspaces:
  "/home/alice/src/infra/**":
    bash:
      "terraform plan *": allow
`

func TestParsePersonaPermissions(t *testing.T) {
	p, ps := quorum.ParsePersona("demo.yaml", []byte(permissionsPersona))
	if len(ps.Errors()) > 0 {
		t.Fatalf("problems: %v", ps)
	}
	if p.Mode != bot.ModeAuto || p.GrantTTL != 2*time.Hour || p.Caution != "allow" {
		t.Errorf("mode %q grantTTL %s caution %q", p.Mode, p.GrantTTL, p.Caution)
	}
	if p.Reviewer == nil || p.Reviewer.URL != "http://127.0.0.1:9999/review" || p.Reviewer.Timeout != 3*time.Second {
		t.Errorf("reviewer = %+v", p.Reviewer)
	}
	var got []string
	for _, r := range p.Permissions {
		got = append(got, r.Tool+"|"+r.Pattern+"|"+string(r.Effect)+"|"+r.Where)
	}
	want := []string{
		"*|*|ask|demo.yaml:12:8",
		"bash|git *|allow|demo.yaml:14:5",
		"bash|git push *|deny|demo.yaml:15:5",
		"edit|docs/*|allow|demo.yaml:17:5",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rules, in file order:\n got %q\nwant %q", got, want)
	}
	if len(p.Workspaces) != 1 || p.Workspaces[0].Glob != "/home/alice/src/infra/**" || len(p.Workspaces[0].Rules) != 1 ||
		p.Workspaces[0].Rules[0].Pattern != "terraform plan *" {
		t.Errorf("workspaces = %+v", p.Workspaces)
	}
}

func TestParsePersonaPermissionProblems(t *testing.T) {
	head := "name: demo\nowner:\n  name: alice\n  slack: U01ALICE\n"
	for _, tc := range []struct{ name, yaml, at, want string }{
		{"bad effect", "permissions:\n  bash:\n    \"git *\": maybe\n", "7:14", `"maybe" is not allow, deny or ask`},
		{"bad shorthand", "permissions:\n  edit: sometimes\n", "6:9", `is not allow, deny or ask`},
		{"bad tool", "permissions:\n  \"bad tool!\": allow\n", "6:3", `tool "bad tool!"`},
		{"not a map", "permissions: [bash]\n", "5:14", "must be a map of tool to rules"},
		{"relative workspace", "workspaces:\n  \"src/**\":\n    bash: allow\n", "6:3", "must be an absolute path glob"},
		{"bad rule in workspace", "workspaces:\n  \"/srv/**\":\n    bash:\n      \"rm *\": nope\n", "8:15", `is not allow, deny or ask`},
		{"bad mode", "mode: yolo\n", "5:7", `mode must be ask, plan or auto, not "yolo"`},
		{"bad grantTTL", "grantTTL: forever\n", "5:11", "grantTTL \"forever\" is not a duration"},
		{"grantTTL too long", "grantTTL: 900h\n", "5:11", "at most"},
		{"reviewer url", "reviewer:\n  url: ftp://x\n", "6:8", "not an http:// or https:// URL"},
		{"reviewer timeout", "reviewer:\n  url: http://x\n  timeout: 5h\n", "7:12", "reviewer timeout"},
		{"caution", "caution: ask\n", "5:10", "caution must be allow"},
		{"unknown key under reviewer", "reviewer:\n  url: http://x\n  token: abc\n", "7:3", "token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ps := quorum.ParsePersona("p.yaml", []byte(head+tc.yaml))
			errs := ps.Errors()
			if len(errs) == 0 {
				t.Fatalf("no error for:\n%s", tc.yaml)
			}
			s := errs.Error()
			if !strings.Contains(s, "p.yaml:"+tc.at+":") || !strings.Contains(s, tc.want) {
				t.Errorf("problems = %s\nwant at %s: %s", s, tc.at, tc.want)
			}
		})
	}
}
