package bot

import (
	"context"
	"math"
)

// SubmitDenyOnly files a request that no vote can approve, only deny: a
// network destination outside the boundary. Its stored electorate is
// DenyOnly(persona), so a ✅ from any channel, counted or not, never
// decides it; why is added to its reasons and shown on every card.
func (g *Gateway) SubmitDenyOnly(ctx context.Context, n NewRequest, why string) (*Request, error) {
	if why == "" {
		why = "this request can only be denied"
	}
	return g.submit(ctx, n, why)
}

// DenyOnly returns p with no one able to approve: everyone who could
// decide becomes a member, the approval quorum is out of reach, and any
// one of them may deny (a denial is always possible). Grants, which need
// the approval electorate, are out of reach too.
func DenyOnly(p Persona) Persona {
	q := p
	q.Members = p.People()
	q.Owner = nil
	q.ApprovalQuorum = math.MaxInt32
	q.DenyQuorum = 1
	return q
}

// Conclude decides a pending request as the consequence of another
// decision (a network rule approved for one request covers this one),
// with reason on its cards, and runs the decision's follow-up: waiters
// woken, decision audited, messages edited. False when it was already
// decided.
func (g *Gateway) Conclude(ctx context.Context, id string, s Status, reason string) (bool, error) {
	won, err := g.Store.Resolve(ctx, id, s, reason, g.now())
	if err != nil {
		return false, err
	}
	if won {
		g.decided(id, s)
	}
	return won, nil
}
