package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// TestPinMismatchFailsBeforeAnyoneApproves: a client pinned to another key
// than the gateway's (a remote or containerised gateway whose key changed)
// learns it when the request is made, not after a person approved: the
// request is withdrawn, and the message names the gateway's key and where
// to pin it.
func TestPinMismatchFailsBeforeAnyoneApproves(t *testing.T) {
	gateway(t, demoPersona)
	// The client's view: no local data dir, a pin naming another key.
	t.Setenv("SIGNOFF_DATA_DIR", filepath.Join(t.TempDir(), "elsewhere"))
	t.Setenv("SIGNOFF_GATEWAY_KEY", signing.NewKey().Npub())
	resp, err := gatewayClient().List(context.Background(), bot.Filter{Status: bot.Pending})
	if err != nil || len(resp) != 0 {
		t.Fatalf("pending before: %v %v", resp, err)
	}

	start := time.Now()
	code, _, errs := cli("request", "--", "rm", "-rf", "/tmp/signoff-pin")
	if code == 0 || time.Since(start) > 10*time.Second {
		t.Fatalf("request = %d after %s:\n%s", code, time.Since(start), errs)
	}
	for _, want := range []string{"not the pinned gateway key", "SIGNOFF_GATEWAY_KEY=npub1", "was withdrawn before anyone approved", "not approved"} {
		if !strings.Contains(errs, want) {
			t.Errorf("request's message lacks %q:\n%s", want, errs)
		}
	}
	all, err := gatewayClient().List(context.Background(), bot.Filter{})
	if err != nil || len(all) != 1 || all[0].Status != bot.Withdrawn {
		t.Errorf("the request was not withdrawn at once: %+v %v", all, err)
	}

	// The hook says the same, and denies.
	code, out, errs := cliIn(strings.NewReader(hookInput("Bash", map[string]any{"command": "rm -rf /tmp/signoff-pin"})), "hook", "claude-code")
	if d, reason := decision(t, out); code != 0 || d != "deny" || !strings.Contains(reason, "not the pinned gateway key") {
		t.Errorf("hook: exit %d, %s %q (stderr %s)", code, d, reason, errs)
	}
}
