package permissions_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/grants"
	"github.com/signoff/signoff/bot/permissions"
	"github.com/signoff/signoff/bot/risk"
	"github.com/signoff/signoff/quorum"
)

// world is a gateway on a real store with a persona parsed from YAML, a
// checker deciding for it, and the folders calls are made from.
type world struct {
	env     *bottest.Env
	checker *permissions.Checker
	root    string // app and infra live here
	prefix  string // the store's key prefix
	alice   bottest.Person
	bob     bottest.Person
	carol   bottest.Person
}

const personaHead = `name: %s
owner:
  name: alice
  nostr: %s
members:
  - name: bob
    nostr: %s
  - name: carol
    nostr: %s
approvalQuorum: 2
`

func newWorld(t *testing.T, name, rest string) *world {
	t.Helper()
	w := &world{root: t.TempDir(), alice: bottest.NewPerson("alice"), bob: bottest.NewPerson("bob"), carol: bottest.NewPerson("carol")}
	for _, d := range []string{"app", "infra/net", "other"} {
		if err := os.MkdirAll(filepath.Join(w.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	yaml := fmt.Sprintf(personaHead, name, w.alice.Key.PublicKey(), w.bob.Key.PublicKey(), w.carol.Key.PublicKey()) +
		strings.ReplaceAll(rest, "ROOT", w.root)
	p, ps := quorum.ParsePersona(name+".yaml", []byte(yaml))
	if len(ps.Errors()) > 0 {
		t.Fatalf("persona: %v", ps)
	}
	rdb, prefix := bottest.Redis(t)
	w.prefix = prefix
	w.env = bottest.NewOn(t, rdb, prefix, p, nil)
	w.env.Gateway.Grants = &grants.Maker{Store: w.env.Store, Audit: w.env.Audit}
	w.checker = &permissions.Checker{
		Personas: w.env.Store, Classifier: risk.Default(), Grants: w.env.Store,
		Audit: w.env.Audit, Requests: w.env.Gateway,
	}
	return w
}

func (w *world) dir(d string) string { return filepath.Join(w.root, d) }

func (w *world) check(t *testing.T, ch permissions.Check) *permissions.Result {
	t.Helper()
	res, err := w.checker.Check(context.Background(), ch)
	if err != nil {
		t.Fatalf("check %+v: %v", ch, err)
	}
	return res
}

// audit reads the gateway's audit log records of one type.
func (w *world) audit(t *testing.T, typ string) []map[string]any {
	t.Helper()
	f, err := os.Open(w.env.AuditPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Type == typ {
			out = append(out, rec.Data)
		}
	}
	return out
}

const tableRules = `permissions:
  bash:
    "git *": allow
    "git push *": deny
    "git push origin docs": allow
    "terraform *": allow
    "terraform apply -target=module.dns": allow
    "npm install": ask
  edit:
    "docs/*": allow
workspaces:
  "ROOT/infra/**":
    bash:
      "git push *": allow
      "make *": deny
`

// TestDecisionTable is rules × commands × modes × layers → decision.
func TestDecisionTable(t *testing.T) {
	w := newWorld(t, "demo", tableRules)
	repo := w.dir("other")
	if err := os.MkdirAll(filepath.Join(repo, ".signoff"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The agent can write this file: its ls deny tightens, its kubectl
	// and git push allows are ignored.
	os.WriteFile(filepath.Join(repo, permissions.RepoFile), []byte("bash:\n  \"ls *\": deny\n  \"kubectl *\": allow\n  \"git push *\": allow\n  \"cat *\": ask\n"), 0o644)
	os.MkdirAll(filepath.Join(repo, "sub"), 0o755)

	app, infra := w.dir("app"), w.dir("infra/net")
	for _, tc := range []struct {
		name     string
		cwd      string
		cmd      string
		tool     string
		input    string
		mode     string
		explicit bool
		want     string // decision
		by       string
	}{
		{name: "allow rule, safe", cwd: app, cmd: "git status", want: "allow", by: permissions.ByAllowRule},
		{name: "deny rule", cwd: app, cmd: "git push origin main", want: "deny", by: permissions.ByDenyRule},
		{name: "last match wins inside a layer", cwd: app, cmd: "git push origin docs", want: "allow", by: permissions.ByAllowRule},
		{name: "workspace over persona", cwd: infra, cmd: "git push origin main", want: "allow", by: permissions.ByAllowRule},
		{name: "workspace deny", cwd: infra, cmd: "make deploy", want: "deny", by: permissions.ByDenyRule},
		{name: "workspace rules do not apply outside it", cwd: app, cmd: "make deploy", want: "allow", by: permissions.ByCaution}, // make runs the Makefile: caution (issue 28)
		{name: "allow wildcard does not cover a dangerous command", cwd: infra, cmd: "git push --force origin main", want: "ask", by: permissions.ByPeople},
		{name: "allow wildcard, dangerous terraform apply asks", cwd: app, cmd: "terraform apply", want: "ask", by: permissions.ByPeople},
		{name: "exact allow covers a dangerous command", cwd: app, cmd: "terraform apply -target=module.dns", want: "allow", by: permissions.ByAllowRule},
		{name: "exact allow is exact", cwd: app, cmd: "terraform apply -target=module.dns -auto-approve", want: "ask", by: permissions.ByPeople},
		{name: "allow wildcard, safe", cwd: app, cmd: "terraform plan", want: "allow", by: permissions.ByAllowRule},
		{name: "ask rule asks even for caution", cwd: app, cmd: "npm install", want: "ask", by: permissions.ByPeople},
		{name: "no rule, safe runs", cwd: app, cmd: "ls -la", want: "allow", by: permissions.BySafe},
		{name: "no rule, caution runs audited", cwd: app, cmd: "rm -rf build", want: "allow", by: permissions.ByCaution},
		{name: "no rule, dangerous asks", cwd: app, cmd: "kubectl delete ns prod", want: "ask", by: permissions.ByPeople},
		{name: "an allowed part does not carry a dangerous one", cwd: app, cmd: "git status && rm -rf /", want: "ask", by: permissions.ByPeople},
		{name: "a denied part denies the whole line", cwd: app, cmd: "ls; git push origin main", want: "deny", by: permissions.ByDenyRule},
		{name: "quoting does not dodge a deny rule", cwd: app, cmd: `"git" 'push' origin main`, want: "deny", by: permissions.ByDenyRule},
		{name: "a deny rule inside a substitution", cwd: app, cmd: "echo $(git push origin main)", want: "deny", by: permissions.ByDenyRule},
		{name: "sudo does not dodge a deny rule", cwd: app, cmd: "sudo git push origin main", want: "deny", by: permissions.ByDenyRule},
		{name: "bash -c does not dodge a deny rule", cwd: app, cmd: "bash -c 'git push origin main'", want: "deny", by: permissions.ByDenyRule},
		{name: "stacked wrappers do not dodge a deny rule", cwd: app, cmd: "env GIT_TRACE=1 nohup timeout 60 git push origin main &", want: "deny", by: permissions.ByDenyRule},
		{name: "signoff exec does not dodge a deny rule", cwd: app, cmd: "signoff exec -- git push origin main", want: "deny", by: permissions.ByDenyRule},
		{name: "xargs does not dodge a deny rule", cwd: app, cmd: "echo main | xargs git push origin", want: "deny", by: permissions.ByDenyRule},
		{name: "a wrapper does not dodge an ask rule", cwd: app, cmd: "sudo npm install", want: "ask", by: permissions.ByPeople},
		{name: "an allow rule does not allow its command under sudo", cwd: app, cmd: "sudo git status", want: "ask", by: permissions.ByPeople},
		{name: "repository deny tightens", cwd: repo, cmd: "ls", want: "deny", by: permissions.ByDenyRule},
		{name: "repository deny holds below it", cwd: filepath.Join(repo, "sub"), cmd: "ls -la", want: "deny", by: permissions.ByDenyRule},
		{name: "repository ask tightens a safe call", cwd: repo, cmd: "cat README.md", want: "ask", by: permissions.ByPeople},
		{name: "repository allow is ignored", cwd: repo, cmd: "kubectl delete ns prod", want: "ask", by: permissions.ByPeople},
		{name: "repository allow does not lift a persona deny", cwd: repo, cmd: "git push origin main", want: "deny", by: permissions.ByDenyRule},
		{name: "edit allowed by a relative path rule", cwd: app, tool: "Edit", input: `{"file_path":"docs/guide.md","old_string":"a","new_string":"b"}`, want: "allow", by: permissions.ByAllowRule},
		{name: "edit outside the rule, caution", cwd: app, tool: "Edit", input: `{"file_path":"src/main.go","old_string":"a","new_string":"b"}`, want: "allow", by: permissions.ByCaution},
		{name: "apply_patch is an edit of its paths", cwd: app, tool: "apply_patch", input: `{"command":"*** Begin Patch\n*** Update File: docs/a.md\n@@\n-a\n+b\n*** End Patch\n"}`, want: "allow", by: permissions.ByAllowRule},
		{name: "apply_patch of a path no rule allows", cwd: app, tool: "apply_patch", input: `{"command":"*** Begin Patch\n*** Update File: docs/a.md\n*** Add File: src/x.go\n+package x\n*** End Patch\n"}`, want: "allow", by: permissions.ByCaution},
		{name: "apply_patch outside the workspace is dangerous", cwd: app, tool: "apply_patch", input: `{"command":"*** Begin Patch\n*** Update File: /etc/passwd\n*** End Patch\n"}`, want: "ask", by: permissions.ByPeople},
		{name: "mode plan: safe runs", cwd: app, cmd: "ls", mode: bot.ModePlan, want: "allow", by: permissions.BySafe},
		{name: "mode plan: caution is denied", cwd: app, cmd: "rm -rf build", mode: bot.ModePlan, want: "deny", by: permissions.ByPlan},
		{name: "mode plan: an allow rule does not lift it", cwd: infra, cmd: "git push origin main", mode: bot.ModePlan, want: "deny", by: permissions.ByPlan},
		{name: "mode plan: dangerous is denied, no one asked", cwd: app, cmd: "kubectl delete ns prod", mode: bot.ModePlan, want: "deny", by: permissions.ByPlan},
		{name: "a call cannot ask for a looser mode", cwd: app, cmd: "kubectl delete ns prod", mode: bot.ModeAuto, want: "ask", by: permissions.ByPeople},
		{name: "explicit: the agent asked", cwd: app, cmd: "ls", explicit: true, want: "ask", by: permissions.ByPeople},
		{name: "explicit: a deny rule still denies", cwd: app, cmd: "git push origin main", explicit: true, want: "deny", by: permissions.ByDenyRule},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := permissions.Check{Persona: "demo", Action: tc.cmd, Cwd: tc.cwd, Mode: tc.mode, Explicit: tc.explicit}
			if tc.tool != "" {
				ch.Tool, ch.Input = tc.tool, json.RawMessage(tc.input)
			}
			res := w.check(t, ch)
			if res.Decision != tc.want || res.By != tc.by {
				t.Errorf("%s in %s: decision %s by %s, want %s by %s\nwhy: %s\nrule: %s\nlevel: %s %v",
					tc.cmd+tc.tool, tc.cwd, res.Decision, res.By, tc.want, tc.by, res.Why, res.Rule, res.Level, res.Reasons)
			}
		})
	}
}

// TestExplainSaysRepositoryAllowIsIgnored: explain shows every layer and
// says the repository's allow rules were ignored.
func TestExplainSaysRepositoryAllowIsIgnored(t *testing.T) {
	w := newWorld(t, "demo", tableRules)
	repo := w.dir("infra/net")
	os.MkdirAll(filepath.Join(repo, ".signoff"), 0o755)
	os.WriteFile(filepath.Join(repo, permissions.RepoFile), []byte("bash:\n  \"kubectl *\": allow\n"), 0o644)
	res := w.check(t, permissions.Check{Persona: "demo", Action: "kubectl delete ns prod", Cwd: repo})
	if res.Decision != "ask" {
		t.Fatalf("decision %s, want ask", res.Decision)
	}
	var names []string
	for _, l := range res.Layers {
		names = append(names, l.Name)
	}
	want := []string{"repository " + filepath.Join(repo, permissions.RepoFile), "workspace " + w.root + "/infra/**", "persona demo"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Fatalf("layers %q, want %q", names, want)
	}
	if !strings.Contains(res.Layers[0].Note, "allow rules ignored") {
		t.Errorf("repository layer note = %q, want it to say its allow rules are ignored", res.Layers[0].Note)
	}
}

// TestRepositoryFileCannotHangTheGateway: a FIFO where the rule file goes
// is not opened for reading (it would block), and everything asks.
func TestRepositoryFileCannotHangTheGateway(t *testing.T) {
	w := newWorld(t, "demo", tableRules)
	repo := w.dir("other")
	os.MkdirAll(filepath.Join(repo, ".signoff"), 0o755)
	if err := mkfifo(filepath.Join(repo, permissions.RepoFile)); err != nil {
		t.Skip("no mkfifo:", err)
	}
	res := w.check(t, permissions.Check{Persona: "demo", Action: "ls", Cwd: repo})
	if res.Decision != "ask" {
		t.Errorf("decision %s (%s), want ask: an unreadable repository file tightens", res.Decision, res.Why)
	}
}

// TestEveryResolvedCheckIsAudited: one audit record per check resolved
// without a person, naming what resolved it.
func TestEveryResolvedCheckIsAudited(t *testing.T) {
	w := newWorld(t, "demo", tableRules)
	app := w.dir("app")
	for _, cmd := range []string{"git status", "git push origin main", "ls", "rm -rf build", "kubectl delete ns prod"} {
		w.check(t, permissions.Check{Persona: "demo", Action: cmd, Cwd: app})
	}
	recs := w.audit(t, "check")
	var by []string
	for _, r := range recs {
		by = append(by, fmt.Sprint(r["by"]))
	}
	want := "allow-rule deny-rule safe caution"
	if strings.Join(by, " ") != want {
		t.Errorf("audited checks resolved by %q, want %q (the ask is not resolved yet)", by, want)
	}
}
