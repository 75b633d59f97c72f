package agent

import (
	"context"
	"time"

	"github.com/signoff/signoff/bot"
)

// waitThroughOutage is one long-poll that outlasts a gateway or store
// outage: while the answer is "unavailable" (the replica died and the
// load balancer has not moved us yet, Redis is restarting) it asks again,
// backing off up to 2s, until the request's deadline plus the grace has
// passed. Any other answer, and ctx ending, return at once. Asking again
// is safe: a wait reads, it never changes the request.
func waitThroughOutage(ctx context.Context, g Gateway, r *bot.Request, wait time.Duration) (*bot.Request, error) {
	backoff := 100 * time.Millisecond
	for {
		next, err := g.Wait(ctx, r.ID, wait)
		if err == nil || bot.ErrorCode(err) != bot.EUnavailable || ctx.Err() != nil ||
			time.Until(r.Deadline) < -deadlineGrace {
			return next, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
