package agent

import (
	"context"
	"errors"
	"time"

	"github.com/signoff/signoff/bot"
)

// Withdrawer takes back a request; httpapi.Client and bot.Gateway are ones.
type Withdrawer interface {
	Withdraw(ctx context.Context, id, reason string) (*bot.Request, error)
}

// withdrawGone withdraws r when its waiter stopped waiting (ctx ended:
// Ctrl-C, SIGTERM, a closed MCP call, the integration's own time limit),
// so no one is asked to approve what nobody waits for. It returns the
// request as the gateway then has it.
func withdrawGone(g Gateway, r *bot.Request, cause error) *bot.Request {
	w, ok := g.(Withdrawer)
	if !ok || r == nil || r.Status.Final() {
		return r
	}
	why := "the requester was interrupted while waiting"
	if errors.Is(cause, context.DeadlineExceeded) {
		why = "the requester stopped waiting (its own time limit)"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if got, err := w.Withdraw(ctx, r.ID, why); err == nil || got != nil && got.Status.Final() {
		if got != nil {
			return got
		}
	}
	return r
}

// Submit files n and returns the request. The call itself is not cut
// short by ctx — a request filed while its answer was lost could not be
// withdrawn — but if ctx ended meanwhile the new request is withdrawn at
// once and ctx's error returned.
func Submit(ctx context.Context, g Gateway, n bot.NewRequest) (*bot.Request, error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	r, err := g.Submit(sctx, n)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if ctx.Err() != nil {
		return withdrawGone(g, r, ctx.Err()), ctx.Err()
	}
	return r, nil
}
