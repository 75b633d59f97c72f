package redis

import (
	"context"
	"errors"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/steptrace"
)

// Group commit (see bot.AuditCommit): the audit log sends a batch of
// records' commits in one pipeline. Redis runs them in order, each script
// checking the chain's head before it writes anything, so a commit whose
// record does not join (a duplicate, a decision already audited) or fails
// leaves the head where it was, and every later one of the batch answers
// "conflict" having done nothing. Other clients' commands may run between
// two of them; a commit that then finds the head moved does nothing too.

var (
	_ bot.AuditBatcher  = (*Store)(nil)
	_ bot.AuditPreparer = (*Store)(nil)
)

// auditOp is a commit prepared for CommitAuditBatch: a vote to tally with
// its record, or a request whose decision record it is.
type auditOp struct {
	s        *Store
	vote     *voteCall
	decision string
}

// CanBatchAudit is false on Cluster, where a request's keys and the
// chain's are in different slots and a vote's record is appended first,
// in a step of its own (RecordVoteAudited).
func (s *Store) CanBatchAudit() bool {
	_, cluster := s.rdb.(*goredis.ClusterClient)
	return !cluster
}

// PrepareVoteAudit judges b and prepares its tally with its record.
func (s *Store) PrepareVoteAudit(ctx context.Context, b bot.Ballot) (*bot.AuditCommit, error) {
	c, err := s.prepareVote(ctx, b, append(s.auditKeys(), s.outboxKey(), s.key("pending")))
	if err != nil {
		return nil, err
	}
	steptrace.Mark(ctx, "judge the ballot; prepare its tally")
	return &bot.AuditCommit{Op: &auditOp{s: s, vote: &c}}, nil
}

// PrepareDecisionAudit prepares request id's decision record, appended
// with its "audited" mark unless the request has it.
func (s *Store) PrepareDecisionAudit(_ context.Context, id string) (*bot.AuditCommit, error) {
	return &bot.AuditCommit{Op: &auditOp{s: s, decision: id}}, nil
}

// StepBatchRoundTrip is the step (steptrace) of a batch's round trip to
// Redis: for an unloaded vote, its own script's.
const StepBatchRoundTrip = "Redis: the batch's round trip (the vote script)"

var errForeignOp = errors.New("audit batch: a commit prepared by a store on other keys")

// CommitAuditBatch runs the batch's commits in order in one pipeline and
// fills in each one's result. A commit with no Op appends its record alone.
func (s *Store) CommitAuditBatch(ctx context.Context, batch []*bot.AuditCommit) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*goredis.Cmd, len(batch))
	for i, c := range batch {
		c.Out, c.InChain, c.Err = bot.VoteOutcome{}, false, nil
		ref := c.Ref
		op, _ := c.Op.(*auditOp)
		switch {
		case c.Op == nil:
			cmds[i] = auditAppendScript.EvalSha(ctx, pipe, s.auditKeys(), ref.Seq, ref.Prev, ref.Hash, ref.Line)
		case op == nil || op.s.prefix != s.prefix:
			c.Err = errForeignOp // not sent: the later ones find the head moved
		case op.vote != nil:
			args := append(op.vote.args, ref.Seq, ref.Prev, ref.Hash, ref.Line)
			cmds[i] = auditedVoteScript.EvalSha(ctx, pipe, op.vote.keys, args...)
		default:
			keys := append(s.auditKeys(), s.requestKeys(op.decision)[0])
			cmds[i] = auditOnceScript.EvalSha(ctx, pipe, keys, ref.Seq, ref.Prev, ref.Hash, ref.Line)
		}
	}
	steptrace.Mark(ctx, "build the batch's script calls")
	pipe.Exec(ctx) // each command holds its own error
	steptrace.Mark(ctx, StepBatchRoundTrip)
	noScript := false
	for i, c := range batch {
		cmd := cmds[i]
		if cmd == nil {
			continue
		}
		if err := cmd.Err(); err != nil {
			if goredis.HasErrorPrefix(err, "NOSCRIPT") {
				// Not run (a restarted Redis forgot the scripts): like a
				// moved head, it is tried again once they are loaded.
				noScript, c.Err = true, bot.ErrAuditConflict
				continue
			}
			c.Err = unavailable("append audit", err)
			continue
		}
		op, _ := c.Op.(*auditOp)
		switch {
		case op != nil && op.vote != nil:
			res, _ := cmd.Slice()
			if len(res) < 4 {
				c.Err = unavailable("append audit", errors.New("unexpected reply from the vote script"))
				continue
			}
			out, appended, err := s.voteResult(ctx, op.vote.id, auditedVoteScript, res)
			c.Out, c.InChain, c.Err = out, appended == 1, err
		case op != nil:
			n, _ := cmd.Int64()
			c.InChain = n == 1
			if n < 0 {
				c.Err = bot.ErrAuditConflict
			}
		default:
			n, _ := cmd.Int64()
			c.InChain = n == 1
			if n != 1 {
				c.Err = bot.ErrAuditConflict
			}
		}
	}
	if noScript {
		for _, sc := range []*goredis.Script{auditAppendScript, auditedVoteScript, auditOnceScript} {
			sc.Load(ctx, s.rdb)
		}
	}
}
