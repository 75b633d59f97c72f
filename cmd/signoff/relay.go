package main

import (
	"context"
	"encoding/json"
)

// publishToRelays sends a signed reaction to Nostr relays.
func publishToRelays(ctx context.Context, a *app, relays []string, ev json.RawMessage) int {
	return a.failf("publishing to relays is not available in this build")
}
