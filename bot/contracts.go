package bot

import (
	"context"
	"encoding/json"
	"time"
)

// The contract: every interface the gateway needs from the outside, in
// one place. Each is required: the gateway asks no part whether it has a
// capability (contract_test.go holds that), and what is optional is a
// field of the Gateway of its own, said where it is declared.

// Store keeps personas and requests, and tallies votes atomically. The
// Redis implementation lives in quorum/redis; any number of gateways may
// share one Store and each request is still decided exactly once.
//
// Every capability the gateway uses is a method of Store: a store that
// lacks one does not compile as a Store (see contract_test.go), rather
// than being found out by a type assertion at run time and silently
// sealing no receipts, holding nothing or auditing without the store.
// The small interfaces it embeds name each capability, for the packages
// that need only that one.
type Store interface {
	NoticeStore        // change notices carrying the change (Start)
	SnapshotStore      // the persona a request was created under
	Notifier           // a vote recorded wakes every replica's waiters
	CreationNotifier   // a request created, for live lists (the console)
	NudgeStore         // reminders and escalations, once across replicas
	ChangeStore        // "unchanged since seen" without a read
	HoldStore          // the requester's long-polls, for withdrawal
	ReceiptStore       // a decision's signed receipt beside it
	DecisionConfirmer  // a decision re-derived from the stored votes
	AuditedVoteStore   // a tally and its audit record in one step
	DecisionAuditStore // a decision record appended once
	AuditPreparer      // commits prepared for the audit's group commit

	// PutPersona loads a persona written by a person. Only start-up calls
	// it: no API reachable by an agent writes a persona.
	PutPersona(ctx context.Context, p Persona) error
	Persona(ctx context.Context, name string) (Persona, error)

	// Create stores a new pending request with a snapshot of its persona,
	// so a later edit of the persona file cannot change who decides it.
	Create(ctx context.Context, r *Request, p Persona) error
	Get(ctx context.Context, id string) (*Request, error)
	List(ctx context.Context, f Filter) ([]*Request, error)
	// AddMessages records where the request was posted, so answers to
	// those messages find it (Lookup) and they can be edited at the end.
	AddMessages(ctx context.Context, id string, refs []MessageRef) error
	Lookup(ctx context.Context, ref MessageRef) (string, error)

	// RecordVote judges a ballot against the request's persona and
	// records it in one atomic step; Decided is set on the one ballot
	// that decides.
	RecordVote(ctx context.Context, b Ballot) (VoteOutcome, error)
	// Resolve decides a pending request (no owner, no channel, expiry);
	// it reports false when the request was already decided.
	Resolve(ctx context.Context, id string, s Status, reason string, at time.Time) (bool, error)
	// Due returns pending requests whose deadline is at or before now.
	Due(ctx context.Context, now time.Time) ([]string, error)
	// Watch calls fn with the id of every request decided by any gateway
	// sharing the store, until ctx ends. One subscription serves all waiters.
	Watch(ctx context.Context, fn func(id string)) error
	Ping(ctx context.Context) error
}

// NoticeStore is a Store whose change notices may carry the change.
// WatchNotices is Watch for every change of a request, not decisions
// alone: fn("", nil) as the subscription is (re)made, then fn(id, known)
// for each change, where known, when not nil, returns a fresh copy of the
// request exactly as the store held it just after that change, so a
// waiter woken by it need not read it. quorum/redis implements it.
type NoticeStore interface {
	WatchNotices(ctx context.Context, fn func(id string, known func() *Request)) error
}

// SnapshotStore is the store capability of reading the persona a request
// was created under; quorum/redis implements it.
type SnapshotStore interface {
	Snapshot(ctx context.Context, id string) (Persona, error)
}

// Notifier tells every gateway sharing the store that a request changed
// without being decided (a vote was recorded), so that long-polls on it
// return at once; quorum/redis implements it on the decision channel.
type Notifier interface {
	Changed(ctx context.Context, id string) error
}

// CreationNotifier tells every gateway sharing the store of each request
// created, for live lists, on a channel of its own (a change notice would
// wake a waiter that came early for nothing); quorum/redis implements it.
type CreationNotifier interface {
	Created(ctx context.Context, id string) error
}

// NudgeStore claims one reminder or escalation of a request, so that of
// all the replicas sharing the store exactly one does it; quorum/redis
// implements it.
type NudgeStore interface {
	ClaimNudge(ctx context.Context, id, what string, ttl time.Duration) (bool, error)
	// PendingIDs names the pending requests (as List with Status
	// Pending would, without reading them).
	PendingIDs(ctx context.Context) ([]string, error)
}

// ChangeStore tells, without reading the whole request, whether it is
// still pending with seen answers stored (Request.Seen): then a long-poll
// that saw it so has nothing new to see. quorum/redis implements it, and
// may answer from the change notices its WatchNotices heard: ask only
// with a waiter on id already registered where that watch wakes it, as
// WaitFunc does.
type ChangeStore interface {
	Unchanged(ctx context.Context, id string, seen int) (bool, error)
}

// HoldStore counts the long-polls a request's requester has begun, across
// every replica sharing the store; quorum/redis implements it.
type HoldStore interface {
	// Hold records that a requester's long-poll on id began and returns
	// how many have begun.
	Hold(ctx context.Context, id string) (int64, error)
	// Holds returns that count.
	Holds(ctx context.Context, id string) (int64, error)
}

// ReceiptStore keeps a request's receipt beside it. Saving one tells every
// gateway sharing the store that the request is decided (its waiters look
// again). known, when not nil, gives fresh copies of the request as a
// read would now, this receipt in it: nil when another receipt was kept
// first, or when the store cannot tell without a read. quorum/redis.Store
// is one.
type ReceiptStore interface {
	SaveReceipt(ctx context.Context, id string, raw json.RawMessage) (known func() *Request, err error)
}

// DecisionConfirmer re-derives a decided request's outcome from the votes
// the store holds: nil when r's approval follows from them (and whether
// they make its grant), an error when it does not. quorum/redis.Store is
// one. A gateway without one seals only what its own deciding step said.
type DecisionConfirmer interface {
	ConfirmDecision(ctx context.Context, r *Request) (grant bool, err error)
}

// AuditedVoteStore is a Store that tallies a ballot and appends its audit
// record in one atomic step (when rec.Shared), or tallies alone. inChain
// says whether the record is part of the chain: not for a duplicate
// delivery, nor a stranger's answer past the stored bound.
type AuditedVoteStore interface {
	RecordVoteAudited(ctx context.Context, b Ballot, rec AuditRef) (out VoteOutcome, inChain bool, err error)
}

// DecisionAuditStore appends a decision's record and marks the request
// audited in one step; false when it already was.
type DecisionAuditStore interface {
	AppendAuditOnce(ctx context.Context, id string, rec AuditRef) (inChain bool, err error)
}

// AuditPreparer is a store that prepares a commit ahead of the chain's
// lock, for a log that batches (BatchAuditor).
type AuditPreparer interface {
	// PrepareVoteAudit: tally b with its record.
	PrepareVoteAudit(ctx context.Context, b Ballot) (*AuditCommit, error)
	// PrepareDecisionAudit: append request id's decision record and mark
	// it audited, unless it already was.
	PrepareDecisionAudit(ctx context.Context, id string) (*AuditCommit, error)
}

// AuditBatcher is a chain store that runs several commits, in order, in
// one round trip, and says for each whether its record joined the chain.
// CanBatchAudit is false where it cannot (Redis Cluster: the chain and a
// request are in different slots).
type AuditBatcher interface {
	CanBatchAudit() bool
	CommitAuditBatch(ctx context.Context, batch []*AuditCommit)
}

// Outbox is the store's queue of decisions to deliver, with its sweep for
// decisions that never reached it (OutboxSweeper).
type Outbox interface {
	OutboxSweeper
	ReadOutbox(ctx context.Context, consumer string, max int, block time.Duration, pending bool) ([]OutboxEntry, error)
	ClaimOutbox(ctx context.Context, consumer string, idle time.Duration, max int) ([]OutboxEntry, error)
	AckOutbox(ctx context.Context, entryID string) error
	MarkStep(ctx context.Context, id, step string) (first bool, err error)
	StepDone(ctx context.Context, id, step string) (bool, error)
}

// OutboxSweeper finds decisions that never reached the outbox (their
// replica died between deciding and enqueueing, which on Redis Cluster are
// two steps) and enqueues them; see quorum/redis.Store.SweepUnqueued.
type OutboxSweeper interface {
	SweepUnqueued(ctx context.Context, owner string, grace, lease time.Duration, now time.Time) ([]string, error)
}

// Channel posts requests to one platform and edits them when decided.
// Answers come back through a VoteSink the adapter was given. Publish
// (Publisher) posts a plain message; a platform that cannot returns an
// error saying so, which the gateway reports for that channel.
type Channel interface {
	Publisher

	Post(ctx context.Context, r *Request, p Persona, c ChannelConfig) ([]MessageRef, error)
	// Update edits the posted messages to show r's outcome.
	Update(ctx context.Context, r *Request, refs []MessageRef) error
}

// Publisher is the Channel capability of posting a plain message (not a
// request: no buttons, nothing to vote on). text is already the
// whole message, escaped and marked as the agent's (PublishText).
type Publisher interface {
	Publish(ctx context.Context, persona string, c ChannelConfig, text string) (MessageRef, error)
}

// VoteSink takes ballots from adapters. The Gateway is one.
type VoteSink interface {
	CastVote(ctx context.Context, b Ballot) (VoteOutcome, error)
}

// Signer signs Nostr events with the gateway's own key, and seals and
// opens the receipts of decisions with it (Notary). signing.Key is one.
type Signer interface {
	Notary

	PublicKey() string
	// SignEvent returns the signed event's JSON and its id.
	SignEvent(kind int, content string, tags [][]string, at time.Time) (json.RawMessage, string, error)
}

// Notary signs receipts with the gateway's key and opens the ones the
// store holds, refusing any its key did not sign. signing.Key is one; a
// Gateway whose Signer is a Notary seals every decision.
type Notary interface {
	SealReceipt(rc Receipt, at time.Time) (json.RawMessage, error)
	OpenReceipt(raw []byte) (Receipt, error)
}

// Classifier gives an action its risk level and reasons.
type Classifier interface {
	Classify(kind Kind, action string) Assessment
}

// ClassifierFunc adapts a function to a Classifier.
type ClassifierFunc func(Kind, string) Assessment

func (f ClassifierFunc) Classify(k Kind, a string) Assessment { return f(k, a) }

// GrantMaker makes a grant from a request approved with "always" by an
// electorate that may grant. The gateway calls it on the decision.
type GrantMaker interface {
	MakeGrant(ctx context.Context, r *Request) error
}

// Auditor appends to the audit log. Services that only record what they
// did (grants, tokens, the network) take an Auditor; the gateway, which
// commits records with the work they record, takes an AuditLog.
type Auditor interface {
	Append(ctx context.Context, e AuditEntry) error
}

// AuditLog is the audit log the gateway writes: a record committed in
// the same step as its work (CommitAuditor) and group-committed when the
// log says it Batches (BatchAuditor). signing.AuditLog is one.
type AuditLog interface {
	CommitAuditor
	BatchAuditor
}

// CommitAuditor is an Auditor that writes a record in the same step as
// the work it records: commit does the work and reports whether the
// record is part of the chain (false: a duplicate delivery, nothing
// happened). When commit fails, the record is not kept.
type CommitAuditor interface {
	Auditor
	AppendCommit(ctx context.Context, e AuditEntry, commit func(context.Context, AuditRef) (bool, error)) error
}

// BatchAuditor is an audit log that group-commits (see AuditCommit).
// AppendBatched writes e's record with c and fills in c's result; an
// error means the record could not be written (c.Err, when set, says why
// the store refused it).
type BatchAuditor interface {
	Auditor
	Batches() bool
	AppendBatched(ctx context.Context, e AuditEntry, c *AuditCommit) error
}

// AuditEntry is one thing that happened to a request.
type AuditEntry struct {
	Type      string          `json:"type"` // request, vote, decision
	RequestID string          `json:"request_id"`
	Data      any             `json:"data"`
	Evidence  json.RawMessage `json:"evidence,omitempty"`
}

// Service is what agents and people call; the HTTP server exposes it and
// the CLI's HTTP client implements it.
type Service interface {
	Submit(ctx context.Context, n NewRequest) (*Request, error)
	Get(ctx context.Context, id string) (*Request, error)
	// Wait returns the request once it is decided or d has passed.
	Wait(ctx context.Context, id string, d time.Duration) (*Request, error)
	List(ctx context.Context, f Filter) ([]*Request, error)
}
