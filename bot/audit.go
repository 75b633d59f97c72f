package bot

import (
	"context"
	"errors"
	"time"
)

// The audit fails closed: a vote, request or action whose record cannot be
// written is refused, and nothing is decided on it. A record and the work
// it records are committed together where the store allows it.

// AuditRef is an audit record ready to join the chain: its place (Seq,
// after Prev), its Hash and its line. Shared is set when the chain lives
// in the store too, so the commit must append it there (after checking
// the head is still Seq-1/Prev) in the same atomic step as its own work.
type AuditRef struct {
	Seq    uint64
	Prev   string
	Hash   string
	Line   []byte
	Shared bool
}

// ErrAuditConflict is returned by a commit whose store chain had moved on
// (another replica appended first): nothing was done, and the record is
// rebuilt on the new head and committed again.
var ErrAuditConflict = errors.New("audit chain head moved")

// Group commit: while one batch of records is on its way to the store,
// the records that arrive wait; the next batch chains them all in order
// and sends their commits in one round trip. Each commit checks the
// chain's head itself, so one that does not join the chain (a duplicate
// delivery) or fails leaves every later one of its batch finding the head
// moved: those do nothing and are chained again on the real head.

// AuditCommit is one record's commit as a batch carries it: the store's
// prepared work (Op, from an AuditPreparer; nil: the record alone), the
// record's place (Ref, set by the log before each try) and, once sent, its
// result. Err is ErrAuditConflict when nothing was done (the head had
// moved), or the store's own error for this commit.
type AuditCommit struct {
	Op  any
	Ref AuditRef

	Out     VoteOutcome // a vote's outcome
	InChain bool
	Err     error
}

// batches says whether g's audit log group-commits with the store.
func (g *Gateway) batches() bool { return g.Audit != nil && g.Audit.Batches() }

// ballotRecord is a vote's audit record: the ballot as received, written
// before (or with) its tally, so its result is not in it — the request's
// votes and its decision record say how it counted.
type ballotRecord struct {
	Voter  Identity  `json:"voter"`
	Choice Choice    `json:"vote"`
	Proof  Proof     `json:"proof"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"` // what the voter said
}

// auditUnavailable is what a refused caller is told.
func auditUnavailable(what string, err error) error {
	return Errorf(EUnavailable, "the audit log cannot be written, so this %s is refused and nothing is decided on it: %v", what, err)
}

// auditOrRefuse writes e, or says why what it records is refused.
func (g *Gateway) auditOrRefuse(ctx context.Context, e AuditEntry, what string) error {
	if g.Audit == nil {
		return nil
	}
	if err := g.Audit.Append(context.WithoutCancel(ctx), e); err != nil {
		g.log().Error("audit append; refused", "type", e.Type, "id", e.RequestID, "err", err)
		return auditUnavailable(what, err)
	}
	return nil
}

// tally counts b with its audit record in one step with the store
// (group-committed when the log batches). A vote whose record cannot be
// written is refused and not counted.
func (g *Gateway) tally(ctx context.Context, b Ballot) (VoteOutcome, error) {
	if g.Audit == nil {
		return g.Store.RecordVote(ctx, b)
	}
	e := AuditEntry{Type: "vote", RequestID: b.RequestID, Data: ballotRecord{
		Voter: b.Voter, Choice: b.Choice, Proof: b.Proof, At: b.At.UTC(), Reason: b.Reason,
	}, Evidence: b.Evidence}
	if g.batches() {
		c, err := g.Store.PrepareVoteAudit(ctx, b)
		if err != nil {
			return VoteOutcome{}, err
		}
		err = g.Audit.AppendBatched(context.WithoutCancel(ctx), e, c)
		if c.Err != nil && !errors.Is(c.Err, ErrAuditConflict) {
			return c.Out, c.Err
		}
		if err != nil {
			g.log().Error("audit append; vote refused", "id", b.RequestID, "err", err)
			return VoteOutcome{}, auditUnavailable("vote", err)
		}
		return c.Out, nil
	}
	var (
		out       VoteOutcome
		commitErr error
	)
	err := g.Audit.AppendCommit(context.WithoutCancel(ctx), e, func(ctx context.Context, rec AuditRef) (bool, error) {
		var inChain bool
		out, inChain, commitErr = g.Store.RecordVoteAudited(ctx, b, rec)
		if errors.Is(commitErr, ErrAuditConflict) {
			return false, commitErr // retried on the new head
		}
		return inChain, commitErr
	})
	if commitErr != nil && !errors.Is(commitErr, ErrAuditConflict) {
		return out, commitErr
	}
	if err != nil {
		g.log().Error("audit append; vote refused", "id", b.RequestID, "err", err)
		return VoteOutcome{}, auditUnavailable("vote", err)
	}
	return out, nil
}

// auditPersist writes a record of something already done (a decision),
// trying again while ctx lasts: the store may be restarting.
func (g *Gateway) auditPersist(ctx context.Context, e AuditEntry) {
	if g.Audit == nil {
		return
	}
	backoff := 100 * time.Millisecond
	for {
		err := g.Audit.Append(context.WithoutCancel(ctx), e)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			g.log().Error("audit append", "type", e.Type, "id", e.RequestID, "err", err)
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
