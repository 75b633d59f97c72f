package bot

import (
	"context"
	"encoding/json"
	"time"
)

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

// Classifier gives an action its risk level and reasons.
type Classifier interface {
	Classify(kind Kind, action string) Assessment
}

// ClassifierFunc adapts a function to a Classifier.
type ClassifierFunc func(Kind, string) Assessment

func (f ClassifierFunc) Classify(k Kind, a string) Assessment { return f(k, a) }

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
