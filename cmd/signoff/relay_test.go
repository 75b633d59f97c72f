package main

import (
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/adapters/nostr/relaytest"
)

// TestEndToEndApproveThroughRelay: serve posts the request to a relay the
// persona names, `signoff approve --relay` publishes the signed reaction
// there instead of the gateway, and the gateway's relay subscription
// counts it.
func TestEndToEndApproveThroughRelay(t *testing.T) {
	relay := relaytest.Start(t)
	gateway(t, demoPersona+"channels:\n  - nostr:\n      relays: ["+relay.URL()+"]\n")
	id, result, code := startRequest(t, "--persona", "demo", "--", "git", "push", "--force")

	c, out, errs := cli("approve", "--relay", relay.URL(), id)
	if c != 0 || !strings.Contains(out, "published to "+relay.URL()) {
		t.Fatalf("approve --relay = %d %q %q", c, out, errs)
	}
	select {
	case got := <-code:
		res := <-result
		if got != 0 || !strings.Contains(res[1], "✅ approved by alice") {
			t.Fatalf("request exited %d:\n%s", got, res[1])
		}
	case <-time.After(15 * time.Second):
		t.Fatal("request not answered 15s after the reaction reached the relay")
	}
}
