package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const rulesPersona = `name: demo
owner:
  name: alice
  nostr: OWNER
timeout: 1m
grantTTL: 3h
permissions:
  bash:
    "git push origin *": deny
`

// TestCheckExplainAlwaysGrants runs the person's whole path on the real
// serve: check and explain, an exec asked of people, approve --always,
// the grant listed, covering the next call, revoked, and asking again.
func TestCheckExplainAlwaysGrants(t *testing.T) {
	gateway(t, rulesPersona)
	work := t.TempDir()

	code, out, errs := cli("check", "--json", "--cwd", work, "--", "git", "push", "origin", "main")
	var res struct{ Decision, By, Rule, Mode string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != checkDeny || res.Decision != "deny" || res.By != "deny-rule" || !strings.Contains(res.Rule, `"git push origin *" → deny`) || res.Mode != "ask" {
		t.Fatalf("check deny rule = %d %q %q (%v)", code, out, errs, err)
	}
	code, out, _ = cli("permissions", "explain", "--cwd", work, "--", "kubectl", "delete", "ns", "prod")
	if code != checkAsk || !strings.Contains(out, "persona demo: no rule matched") || !strings.Contains(out, "♾️ would grant: `kubectl delete`, on `ns` only (the same kind; at most 2 operands") || !strings.Contains(out, "; in "+work+", for 3h0m0s") {
		t.Errorf("explain = %d\n%s", code, out)
	}

	// An exec of a dangerous command goes to people; alice answers always.
	marker := filepath.Join(work, "ran")
	script := "touch " + marker + " && rm -rf /nonexistent-signoff-test/*" // dangerous to the classifier, harmless
	done := background(nil, "exec", "--", "sh", "-c", script)
	r := awaitPending(t)
	if r.GrantScope == nil {
		t.Fatalf("request carries no grant scope: %+v", r)
	}
	if c, out, errs := cli("approve", "--always", r.ID); c != 0 || !strings.Contains(out, "grant "+r.ID+" made") || !strings.Contains(errs, "don't ask again for: exactly `sh -c '"+script+"'`") {
		t.Fatalf("approve --always = %d %q %q", c, out, errs)
	}
	if res := finished(t, done); res.code != 0 {
		t.Fatalf("exec after approval = %d %q", res.code, res.err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the approved command did not run: %v", err)
	}
	os.Remove(marker)

	code, out, _ = cli("grants", "--json")
	var list struct {
		Grants []struct {
			ID, Persona string
			By          []string
			Uses        int
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 || len(list.Grants) != 1 || list.Grants[0].ID != r.ID || list.Grants[0].By[0] != "alice" {
		t.Fatalf("grants = %d %q (%v)", code, out, err)
	}
	// Covered now: runs without asking anyone.
	if res := finished(t, background(nil, "exec", "--", "sh", "-c", script)); res.code != 0 || !strings.Contains(res.err, "allowed by grant "+r.ID) {
		t.Fatalf("exec under the grant = %d %q", res.code, res.err)
	}
	if code, out, _ := cli("grants"); code != 0 || !strings.Contains(out, r.ID) || !strings.Contains(out, "alice") {
		t.Errorf("grants table = %d\n%s", code, out)
	}

	if code, out, errs := cli("grants", "revoke", r.ID); code != 0 || !strings.Contains(out, "revoked grant "+r.ID) {
		t.Fatalf("revoke = %d %q %q", code, out, errs)
	}
	if code, out, _ := cli("check", "--", "sh", "-c", script); code != checkAsk {
		t.Errorf("after revoking, check = %d %q, want ask", code, out)
	}
	if code, _, errs := cli("grants", "revoke", r.ID); code != 2 || !strings.Contains(errs, "no live grant") {
		t.Errorf("revoking again = %d %q", code, errs)
	}
}

func TestPermissionsCheck(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".signoff"), 0o755)
	os.WriteFile(filepath.Join(dir, ".signoff", "permissions.yaml"), []byte("bash:\n  \"rm *\": deny\n  \"ls *\": allow\n"), 0o644)
	code, out, errs := cli("permissions", "check", dir)
	if code != 0 || !strings.Contains(out, "ok: 2 rule(s)") || !strings.Contains(errs, "permissions.yaml:3:3: warning:") || !strings.Contains(errs, "allow is ignored") {
		t.Errorf("good file = %d %q %q", code, out, errs)
	}
	os.WriteFile(filepath.Join(dir, ".signoff", "permissions.yaml"), []byte("bash:\n  \"rm *\": maybe\n"), 0o644)
	if code, _, errs := cli("permissions", "check", dir); code != 1 || !strings.Contains(errs, "permissions.yaml:2:11: error:") {
		t.Errorf("bad file = %d %q", code, errs)
	}
	personas := t.TempDir()
	os.WriteFile(filepath.Join(personas, "p.yaml"), []byte("name: p\nowner:\n  name: a\n  slack: U01ALICE\nmode: yolo\n"), 0o644)
	if code, _, errs := cli("permissions", "check", personas); code != 1 || !strings.Contains(errs, "p.yaml:5:7: error: mode must be") {
		t.Errorf("bad persona = %d %q", code, errs)
	}
}

// TestAgentCannotStretchAGrantThroughExec: the ssh grant on the
// real serve. The owner answers ♾️ to `signoff exec -- ssh prod sudo
// systemctl restart nginx` (the card and `signoff grants` say it covers
// that command through `ssh prod` then `sudo`); the agent's later
// `ssh prod sudo pip install evil` still asks.
func TestAgentCannotStretchAGrantThroughExec(t *testing.T) {
	gateway(t, "name: demo\nowner:\n  name: alice\n  nostr: OWNER\ntimeout: 1m\npermissions:\n  bash:\n    \"*\": ask\n")
	bin := t.TempDir() // a stand-in ssh: a real process that runs nothing remote
	os.WriteFile(filepath.Join(bin, "ssh"), []byte("#!/bin/sh\necho \"ssh $*\" >>"+filepath.Join(bin, "ran")+"\n"), 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	done := background(nil, "exec", "--", "ssh", "prod", "sudo", "systemctl", "restart", "nginx")
	r := awaitPending(t)
	want := "`systemctl restart` run through `ssh prod` then `sudo`"
	if r.GrantScope == nil || !strings.Contains(r.GrantScope.Text(), want) || !strings.Contains(r.GrantScope.Text(), "on `nginx` only") {
		t.Fatalf("the request's grant scope %+v does not say %q", r.GrantScope, want)
	}
	if c, out, errs := cli("approve", "--always", r.ID); c != 0 || !strings.Contains(out, "grant "+r.ID+" made") || !strings.Contains(errs, want) {
		t.Fatalf("approve --always = %d %q %q", c, out, errs)
	}
	if res := finished(t, done); res.code != 0 {
		t.Fatalf("exec after approval = %d %q", res.code, res.err)
	}
	if code, out, _ := cli("grants"); code != 0 || !strings.Contains(out, want) {
		t.Errorf("grants = %d\n%s", code, out)
	}
	for _, wider := range [][]string{
		{"ssh", "prod", "sudo", "pip", "install", "evil"},
		{"ssh", "prod", "sudo", "make", "-f", "/tmp/x.mk"},
		{"ssh", "staging", "sudo", "systemctl", "restart", "nginx"},
		{"ssh", "prod", "sudo", "systemctl", "restart", "nginx", "sshd"},
	} {
		if code, out, _ := cli(append([]string{"check", "--"}, wider...)...); code != checkAsk || strings.Contains(out, "grant") {
			t.Errorf("check %v under the grant = %d %q, want ask", wider, code, out)
		}
	}
	if res := finished(t, background(nil, "exec", "--", "ssh", "prod", "sudo", "systemctl", "restart", "nginx")); res.code != 0 || !strings.Contains(res.err, "allowed by grant "+r.ID) {
		t.Fatalf("the granted command again = %d %q", res.code, res.err)
	}
}
