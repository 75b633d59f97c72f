package bot

import (
	"context"
	"time"
)

// DefaultWithdrawGrace is how long a requester's long-poll may be gone
// before its request is withdrawn: long enough for a client to poll again
// after each answer, short enough that owners stop being asked about
// something nobody waits for.
const DefaultWithdrawGrace = 5 * time.Second

// Withdraw takes back a pending request: it becomes Withdrawn (final,
// never an approval), and like any decision it is audited and every posted
// card is edited to say so. Withdrawing a decided request is a conflict.
func (g *Gateway) Withdraw(ctx context.Context, id, reason string) (*Request, error) {
	r, err := g.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Status.Final() {
		return r, Errorf(EConflict, "request %s is already %s", id, r.Status)
	}
	if reason == "" {
		reason = "the requester withdrew it"
	}
	if len(reason) > MaxReasonLen {
		return nil, Errorf(EInvalid, "reason is longer than %d bytes", MaxReasonLen)
	}
	won, err := g.Store.Resolve(ctx, id, Withdrawn, reason, g.now())
	if err != nil {
		return nil, err
	}
	if won {
		g.decided(id, Withdrawn)
	}
	cur, err := g.Store.Get(ctx, id)
	if err == nil && !won && cur.Status != Withdrawn {
		return cur, Errorf(EConflict, "request %s was decided first: %s", id, cur.Status)
	}
	return cur, err
}

// WaitHeld is Wait for the requester itself. If its connection goes away
// before the wait ends (the hook was killed, the MCP client closed) and no
// new long-poll on the request begins on any replica within
// WithdrawGrace, the request is withdrawn. A gateway that is shutting
// down withdraws nothing: the requester may poll the next one.
func (g *Gateway) WaitHeld(ctx context.Context, id string, d time.Duration) (*Request, error) {
	n, err := g.Store.Hold(ctx, id)
	if err != nil {
		return nil, err
	}
	r, err := g.Wait(ctx, id, d)
	if ctx.Err() == nil || g.stopping() {
		return r, err
	}
	g.withdrawUnless(id, n)
	return r, err
}

// ExpectHeld is told that the requester's client just filed id and will
// long-poll it with WaitHeld: if no such poll begins within WithdrawGrace
// (the client died before its first poll), the request is withdrawn.
func (g *Gateway) ExpectHeld(id string) {
	if !g.stopping() {
		g.withdrawUnless(id, 0)
	}
}

// withdrawUnless withdraws id after the grace period unless a requester's
// long-poll began since the n-th.
func (g *Gateway) withdrawUnless(id string, n int64) {
	grace := g.WithdrawGrace
	if grace <= 0 {
		grace = DefaultWithdrawGrace
	}
	g.background(func() {
		select {
		case <-time.After(grace):
		case <-g.done:
			return
		}
		bctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if now, err := g.Store.Holds(bctx, id); err != nil || now != n {
			return // polled again (or the store cannot say): still waited on
		}
		if _, err := g.Withdraw(bctx, id, "the requester went away (its connection closed)"); err == nil {
			g.log().Info("request withdrawn: its requester went away", "id", id)
		}
	})
}

func (g *Gateway) stopping() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed || g.done == nil
}
