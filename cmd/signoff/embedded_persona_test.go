package main

import (
	"strings"
	"testing"
	"time"
)

// TestEmbeddedExamplePersonaApprovesNoOne: `serve` with no persona folder
// runs on the embedded example. Its owner used to be a fixed npub whose
// secret key the operator does not hold: requests waited for a stranger,
// who alone could approve them. The example has no owner now: serve says
// at start that no one can approve it and how to make a persona you own,
// a request is denied at once saying so, and an approval signed by any
// key approves nothing.
func TestEmbeddedExamplePersonaApprovesNoOne(t *testing.T) {
	_, logs := startGateway(t, "")
	for _, want := range []string{
		"using the embedded example",
		"NO ONE CAN APPROVE: persona demo has no owner",
		"run `signoff init`",
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("serve's start-up log lacks %q:\n%s", want, logs)
		}
	}

	id, result, code := startRequest(t, "--persona", "demo", "--timeout", "3s", "--reason", "release day", "--action", "deploy v2 to prod")
	cli("approve", id) // signed by SIGNOFF_KEY, a key of the test's: no one's in this persona
	select {
	case c := <-code:
		res := <-result
		if c == 0 || strings.Contains(res[1], "✅ approved") {
			t.Fatalf("request on the embedded example exited %d, approved:\n%s", c, res[1])
		}
		if !strings.Contains(res[1], "❌ denied") || !strings.Contains(res[1], "persona demo has no owner, so no one may approve") {
			t.Errorf("request output does not say no one can approve demo:\n%s", res[1])
		}
	case <-time.After(15 * time.Second):
		t.Fatal("request still waiting 15s after it was made")
	}
	if c, out, errs := cli("show", id); c != 0 || !strings.Contains(out+errs, "has no owner, so no one may approve") {
		t.Errorf("show = %d %q %q, want the reason: no one may approve", c, out, errs)
	}
}

// TestOwnerlessPersonaFileWarnsAtStart: a persona file a person wrote
// without an owner (members only, say) loads, and serve says at start that
// no one can approve it and where to add one.
func TestOwnerlessPersonaFileWarnsAtStart(t *testing.T) {
	_, logs := startGateway(t, "", demoPersona, "name: ops\nmembers:\n  - name: bob\n    slack: U02BOB\n")
	if !strings.Contains(logs.String(), "NO ONE CAN APPROVE: persona ops has no owner") || !strings.Contains(logs.String(), "add an owner to its file in ") {
		t.Errorf("serve's log does not warn about ops:\n%s", logs)
	}
	if strings.Contains(logs.String(), "persona demo has no owner") {
		t.Errorf("serve warns about demo, which has an owner:\n%s", logs)
	}
	id, result, code := startRequest(t, "--persona", "ops", "--timeout", "3s", "--action", "restart the queue")
	if c := <-code; c != 1 || !strings.Contains((<-result)[1], "persona ops has no owner, so no one may approve") {
		t.Errorf("request %s on ops exited %d, want a denial saying no one may approve", id, c)
	}
}
