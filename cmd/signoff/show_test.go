package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/signoff/signoff/bot"
)

// TestShowMixedVotes: show names every vote — counted, ignored and why,
// with its proof and reason — who may still answer, and the action whole.
func TestShowMixedVotes(t *testing.T) {
	bobKey, bobNpub := keyFile(t)
	carolKey, carolNpub := keyFile(t)
	strangerKey, _ := keyFile(t)
	_ = carolKey
	gateway(t, strings.NewReplacer("BOB", bobNpub, "CAROL", carolNpub).Replace(`name: team
owner:
  name: alice
  nostr: OWNER
members:
  - name: bob
    nostr: BOB
  - name: carol
    nostr: CAROL
  - name: dave
    slack: U0DAVE
approvalQuorum: 2
timeout: 1m
`))
	long := "psql -c 'DROP TABLE users' " + strings.Repeat("--verbose ", 40)
	id, _, code := startRequest(t, "--persona", "team", "--reason", "reset the test db", "--", "sh", "-c", long)
	if c, _, errs := cli("approve", "--key", bobKey, "--reason", "test db only", id); c != 0 {
		t.Fatalf("bob: %d %s", c, errs)
	}
	if c, _, _ := cli("deny", "--key", strangerKey, id); c != 1 {
		t.Fatalf("a stranger's deny exited %d, want 1 (ignored)", c)
	}
	c, out, errs := cli("show", id)
	if c != 0 {
		t.Fatalf("show = %d %s", c, errs)
	}
	for _, want := range []string{
		"request " + id + " · persona team · pending, ",
		strings.TrimSpace(strings.Repeat("--verbose ", 40)), // unabridged
		"reason given: reset the test db",
		"risk: dangerous",
		"who decides: owner alice; members bob, carol, dave (approvalQuorum 2, denyQuorum 1)",
		"needs: the owner (alice), or 1 more of: carol, dave",
		"not yet answered: alice, carol, dave",
		"bob (nostr:", `approve · counted · proof signed — said "test db only"`,
		"deny · ignored · proof signed: nostr:",
		"is not an owner or member of persona team",
		"nostr event ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	c, out, _ = cli("show", "--json", id)
	var r bot.Request
	if c != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Votes) != 2 || r.Electorate == nil || r.Electorate.Needs == "" {
		t.Errorf("show --json = %d %s", c, out)
	}
	cli("approve", id) // alice
	<-code
	if _, out, _ := cli("show", id); !strings.Contains(out, "decision: ✅ approved by alice") {
		t.Errorf("decided show:\n%s", out)
	}
}

// TestShowCannotBeSpoofedByTheAction: an action with terminal escapes
// and a bidi override shows them as text.
func TestShowCannotBeSpoofedByTheAction(t *testing.T) {
	gateway(t, demoPersona)
	id, _, code := startRequest(t, "--action", "ls\x1b[2K\r✅ approved by alice\u202eexe.sh")
	_, out, _ := cli("show", id)
	if strings.ContainsAny(out, "\x1b\r\u202e") {
		t.Errorf("raw control characters reach the terminal: %q", out)
	}
	if !strings.Contains(out, `ls\x1b[2K\x0d✅ approved by alice\u202eexe.sh`) {
		t.Errorf("the action is not shown escaped:\n%s", out)
	}
	cli("withdraw", id)
	<-code
}
