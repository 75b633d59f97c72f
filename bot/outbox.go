package bot

import (
	"context"
	"errors"
	"time"
)

// A decision's side effects (its audit record, the edits of its cards)
// are delivered from the store's outbox by whichever replica is alive,
// not by a goroutine of the one that decided: the step that decides also
// enqueues it, each live replica reads the outbox, and entries a stopped
// replica had taken are claimed by another once idle. Delivery is
// idempotent: the record is appended with its "audited" mark in one step,
// and each platform's edit is marked done.

// OutboxEntry is one decided request waiting for its side effects.
type OutboxEntry struct {
	EntryID   string
	RequestID string
}

// Orphan sweeps: how often, and how long a decision is left to the
// replica that made it before another enqueues it.
const (
	orphanSweepEvery = 5 * time.Second
	orphanGrace      = 3 * time.Second
)

func (g *Gateway) claimIdle() time.Duration {
	if g.ClaimIdle > 0 {
		return g.ClaimIdle
	}
	return 2*g.PostTimeout + 10*time.Second
}

// runOutbox delivers decisions until ctx ends.
func (g *Gateway) runOutbox(ctx context.Context) {
	lastClaim, lastSweep := time.Now(), time.Now()
	for ctx.Err() == nil {
		es, err := g.Outbox.ReadOutbox(ctx, g.consumer, 32, time.Second, false)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			g.log().Warn("read outbox", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		for _, e := range es {
			g.deliverEntry(e)
		}
		if time.Since(lastClaim) >= min(time.Second, g.claimIdle()/2) {
			lastClaim = time.Now()
			claimed, err := g.Outbox.ClaimOutbox(ctx, g.consumer, g.claimIdle(), 32)
			if err != nil && ctx.Err() == nil {
				g.log().Warn("claim outbox", "err", err)
			}
			for _, e := range claimed {
				g.log().Info("delivering a decision another replica took and did not finish", "id", e.RequestID)
				g.deliverEntry(e)
			}
		}
		if time.Since(lastSweep) >= orphanSweepEvery {
			lastSweep = time.Now()
			ids, err := g.Outbox.SweepUnqueued(ctx, g.consumer, orphanGrace, orphanSweepEvery, g.now())
			if err != nil && ctx.Err() == nil {
				g.log().Warn("sweep for decisions never enqueued", "err", err)
			}
			for _, id := range ids {
				g.log().Warn("a decision was never put in the outbox (its replica stopped right after deciding); enqueued it", "id", id)
			}
		}
	}
}

// drainOutbox delivers, at Close, what this replica has taken or is due,
// for a few seconds at most; the rest is claimed by another replica.
func (g *Gateway) drainOutbox() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, pending := range []bool{true, false} {
		es, err := g.Outbox.ReadOutbox(ctx, g.consumer, 1000, -1, pending)
		if err != nil {
			return
		}
		for _, e := range es {
			g.deliverEntry(e)
		}
	}
}

func (g *Gateway) deliverEntry(e OutboxEntry) {
	// This gateway's own decision is sealed by the vote's goroutine (and
	// its record appended): wait for that rather than race it.
	g.local.wait(e.RequestID, localWaitMax)
	ctx, cancel := context.WithTimeout(context.Background(), 2*g.PostTimeout+5*time.Second)
	defer cancel()
	err := g.deliver(ctx, e.RequestID)
	if err != nil && ErrorCode(err) != ENotFound {
		g.log().Error("deliver decision; it will be tried again", "id", e.RequestID, "err", err)
		return
	}
	if err := g.Outbox.AckOutbox(ctx, e.EntryID); err != nil {
		g.log().Warn("ack outbox", "id", e.RequestID, "err", err)
	}
}

// deliver does a decision's side effects, each at most once: the audit
// record, the receipt (when the deciding gateway did not seal it), the
// grant of an "always" approval, then each platform's edit.
func (g *Gateway) deliver(ctx context.Context, id string) error {
	var r *Request
	if known, ok := g.justSealed.take(id); ok {
		r = known() // sealed here a moment ago: final, as the store holds it
	} else {
		var err error
		if r, err = g.Store.Get(ctx, id); err != nil {
			return err
		}
	}
	if !r.Status.Final() {
		return nil
	}
	if err := g.auditDecisionOnce(ctx, r); err != nil {
		return err
	}
	if len(r.Receipt) == 0 && g.notary() != nil {
		if done, err := g.Outbox.StepDone(ctx, id, "seal"); err != nil {
			return err
		} else if !done {
			err := g.sealConfirmed(ctx, r)
			var uc errUnconfirmed
			if errors.As(err, &uc) {
				// Not a decision a gateway made: no receipt, no grant, no
				// edits; readers are told denied.
				g.log().Error("outbox: the store's decision is not supported by its votes; not sealed", "id", id, "status", r.Status, "err", uc.err)
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	if err := g.grantOnce(ctx, r); err != nil {
		return err
	}
	byPlatform := map[Platform][]MessageRef{}
	for _, m := range r.Messages {
		byPlatform[m.Platform] = append(byPlatform[m.Platform], m)
	}
	for p, refs := range byPlatform {
		ch := g.Channels[p]
		if ch == nil {
			continue
		}
		step := "edit:" + string(p)
		if done, err := g.Outbox.StepDone(ctx, id, step); err != nil || done {
			continue
		}
		g.update(ctx, ch, r, refs)
		g.Outbox.MarkStep(ctx, id, step)
	}
	return nil
}

// auditDecisionOnce appends r's decision record unless the store says it
// was appended. A record this gateway appended is remembered, so its own
// outbox delivery, which follows the seal's, asks nothing (another
// replica's, after this one stopped, asks the store as before).
func (g *Gateway) auditDecisionOnce(ctx context.Context, r *Request) error {
	if _, done := g.audited.get(r.ID); g.Audit == nil || done {
		return nil
	}
	e := AuditEntry{Type: "decision", RequestID: r.ID, Data: map[string]any{
		"status": r.Status, "decided_by": r.DecidedBy, "decided_at": r.DecidedAt, "reason": r.DecisionReason,
	}}
	var appended bool
	logDecided := func() {
		g.audited.put(r.ID, struct{}{})
		g.log().Info("request decided", "id", r.ID, "status", r.Status, "by", r.DecidedBy, "reason", r.DecisionReason)
		g.Metrics.decision(r)
	}
	if g.batches() {
		c, err := g.Store.PrepareDecisionAudit(ctx, r.ID)
		if err != nil {
			return err
		}
		if err := g.Audit.AppendBatched(ctx, e, c); err != nil {
			return err
		}
		if c.Err != nil {
			return c.Err
		}
		if c.InChain {
			logDecided()
		}
		return nil
	}
	err := g.Audit.AppendCommit(ctx, e, func(ctx context.Context, rec AuditRef) (bool, error) {
		in, err := g.Store.AppendAuditOnce(ctx, r.ID, rec)
		appended = in
		return in, err
	})
	if err == nil && appended {
		logDecided()
	}
	if errors.Is(err, ErrAuditConflict) {
		return err
	}
	return err
}

// grantOnce makes the grant of a request approved with "always", once:
// by the deciding gateway before it answers the voter, or here from the
// outbox when that gateway stopped first. Whether the votes make a grant
// is asked of the store's votes (DecisionConfirmer), not of a field.
func (g *Gateway) grantOnce(ctx context.Context, r *Request) error {
	if g.Grants == nil || r.Status != Approved || r.GrantScope == nil {
		return nil
	}
	if done, err := g.Outbox.StepDone(ctx, r.ID, "grant"); err != nil || done {
		return err
	}
	grant, err := g.Store.ConfirmDecision(ctx, r)
	if err != nil {
		if ErrorCode(err) == EConflict {
			return nil
		}
		return err
	}
	if grant {
		rr := *r
		rr.Always = true
		if err := g.Grants.MakeGrant(ctx, &rr); err != nil {
			return err
		}
	}
	_, err = g.Outbox.MarkStep(ctx, r.ID, "grant")
	return err
}
