package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/signoff/signoff/adapters/nostr"
)

// publishToRelays sends a signed reaction to Nostr relays instead of the
// gateway; the gateway's relay subscription counts it.
func publishToRelays(ctx context.Context, a *app, relays []string, ev json.RawMessage) int {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	accepted, err := nostr.PublishEvent(ctx, relays, ev)
	if err != nil {
		return a.fail(err)
	}
	fmt.Fprintf(a.stdout, "published to %s; the gateway counts it when it reads it from a relay it watches\n", strings.Join(accepted, ", "))
	return 0
}
