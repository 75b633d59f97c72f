package netpolicy

import (
	"context"
	"errors"
	"time"

	"github.com/signoff/signoff/bot"
)

// Draft is a destination the proxy refused: one per persona, host, port
// and program, counted, never duplicated. A draft is never posted to
// anyone; a person may approve it, which files it as a request first.
type Draft struct {
	ID      string    `json:"id"`
	Persona string    `json:"persona"`
	Dest    Dest      `json:"dest"`
	Reason  string    `json:"reason"`
	Count   int64     `json:"count"`
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
	// Request is set once the draft was filed as a request.
	Request string `json:"request,omitempty"`
}

// DraftTTL is how long a draft is kept after its last refusal: a
// destination nobody approved in a week is dropped, and room is made for
// new ones (the store keeps at most a bounded number).
const DraftTTL = 7 * 24 * time.Hour

// Key is what makes two refusals the same draft.
func (d Draft) Key() string {
	k := d.Persona + "|" + JoinHostPort(d.Dest.Host, d.Dest.Port) + "|" + d.Dest.Program
	if d.Dest.Extension != "" {
		k += "|ext:" + d.Dest.Extension
	}
	return k
}

// Record is what the store keeps of a network request beside the gateway
// request of the same id: its destination. The status, votes and who
// decided live in the gateway request.
type Record struct {
	ID        string    `json:"id"`
	Persona   string    `json:"persona"`
	Dest      Dest      `json:"dest"`
	Reason    string    `json:"reason"`
	Draft     string    `json:"draft,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Outside is set when the destination was outside the boundary when
	// filed: the request can only be denied.
	Outside bool `json:"outside,omitempty"`
}

// Staged is an edited copy of the policy a person approved a request
// with (--policy-from), to become the next revision if it is still based
// on the current one when the request is decided.
type Staged struct {
	Base   int    `json:"base"`
	Policy Policy `json:"policy"`
	By     string `json:"by"`
}

// ErrMoved is Commit's answer when another revision came first.
var ErrMoved = errors.New("the policy changed meanwhile")

// Store keeps revisions, drafts and network requests. quorum/redis
// implements it; every replica sharing the store sees the same policy.
// KindCache is what a Store may know of a request's kind without a round
// trip (quorum/redis: its decode cache): a decision of a request known
// not to be a network request is not looked up. A request's kind never
// changes, so what is known stays true.
type KindCache interface {
	KnownKind(id string) (bot.Kind, bool)
}

type Store interface {
	// CurrentRevision returns the newest revision; N is 0 (and the policy
	// empty) when there is none.
	CurrentRevision(ctx context.Context) (Revision, error)
	Revision(ctx context.Context, n int) (Revision, error)
	// CommitRevision stores rev as revision rev.N, which must be one past
	// the current; ErrMoved when the current is no longer rev.N-1. With
	// rev.Request set, a request already applied is not applied twice:
	// the revision it made is returned with applied false. A rev with N 0
	// stores nothing but marks rev.Request applied at the current one.
	CommitRevision(ctx context.Context, rev Revision) (n int, applied bool, err error)
	// AppliedAt reports the revision request id was applied at.
	AppliedAt(ctx context.Context, id string) (int, bool, error)
	// WatchPolicy calls fn with each new revision number, and with 0
	// whenever the subscription is (re)established, until ctx ends.
	WatchPolicy(ctx context.Context, fn func(n int)) error

	// PutDraft adds a refusal: a new draft, or one more count of the same.
	PutDraft(ctx context.Context, d Draft) (Draft, error)
	Drafts(ctx context.Context) ([]Draft, error)
	// LinkDraft records the request a draft was filed as.
	LinkDraft(ctx context.Context, draftID, requestID string) error

	// SetFileHash records the policy file's digest, returning the last.
	SetFileHash(ctx context.Context, h string) (string, error)

	PutRecord(ctx context.Context, r Record) error
	Record(ctx context.Context, id string) (Record, error)
	Records(ctx context.Context) ([]Record, error)

	SetStaged(ctx context.Context, id string, s Staged) error
	GetStaged(ctx context.Context, id string) (*Staged, error)
	// SetDenyReason keeps the reason a voter gave with a denial.
	SetDenyReason(ctx context.Context, id, voter, reason string) error
	DenyReasons(ctx context.Context, id string) (map[string]string, error)
}
