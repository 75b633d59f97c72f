package bot

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// KindReceipt is the Nostr kind of a gateway's decision receipt. It sits in
// the ephemeral range (NIP-01: 20000–29999): a receipt is handed to the
// client that asked, never kept by relays.
const KindReceipt = 29207

// Receipt is the gateway's signed word on one decision: which request,
// about exactly which action (its digest), what was decided, by whom and
// when. The hook, exec, request and the MCP server act on an approval only
// when its receipt verifies against the gateway key they pinned, so a fake
// server at SIGNOFF_URL, or a status written into the store by hand, cannot
// approve anything.
type Receipt struct {
	RequestID    string `json:"request_id"`
	Persona      string `json:"persona"`
	Kind         Kind   `json:"kind"`
	ActionDigest string `json:"action_digest"`
	// Nonce is the one the client sent with its request: a receipt for an
	// earlier ask of the same action cannot be replayed as this one's.
	Nonce     string    `json:"nonce,omitempty"`
	Status    Status    `json:"status"`
	DecidedBy []string  `json:"decided_by"`
	DecidedAt time.Time `json:"decided_at"`
	Reason    string    `json:"reason,omitempty"`
}

// ActionDigest is the hex SHA-256 of an action as the gateway holds it: its
// kind (command when empty) and its text with surrounding space trimmed.
// A client computes it from what it asked, the gateway from what it stored.
func ActionDigest(k Kind, action string) string {
	if k == "" {
		k = KindCommand
	}
	h := sha256.New()
	h.Write([]byte(k))
	h.Write([]byte{0})
	h.Write([]byte(strings.TrimSpace(action)))
	return hex.EncodeToString(h.Sum(nil))
}

// SealWindow is how long a decided request may wait for the receipt its
// deciding gateway seals. Past it, the reader seals it itself from what
// the store confirms (sealConfirmed) — the outbox does the same — so a
// late seal never makes an approval read as denied, while a status no
// votes support still does.
const SealWindow = 5 * time.Second

// notary is the gateway's key (nil only on a Gateway never started, as a
// test of Nudge alone makes).
func (g *Gateway) notary() Notary {
	if g.Signer == nil {
		return nil
	}
	return g.Signer
}

// seal writes the receipt of a decision the store just made: status is what
// the deciding step (the vote script, Resolve) returned, so a status field
// rewritten meanwhile by someone with access to the store is not signed.
//
// It returns what the store knows of the request sealed (see
// ReceiptStore), for the waiters: nil, they read it.
func (g *Gateway) seal(ctx context.Context, id string, status Status) (known func() *Request) {
	n := g.notary()
	if n == nil {
		return nil
	}
	r, err := g.Store.Get(ctx, id)
	if err != nil {
		g.log().Warn("seal decision: load request; the outbox seals it", "id", id, "err", err)
		return nil
	}
	if r.Status != status || !status.Final() {
		g.log().Error("seal decision: the store's status is not the one decided; not sealed",
			"id", id, "decided", status, "store", r.Status)
		return nil
	}
	known, err = g.saveSeal(ctx, n, r)
	if err != nil {
		g.log().Warn("seal decision; the outbox seals it", "id", id, "err", err)
	}
	return known
}

func (g *Gateway) saveSeal(ctx context.Context, n Notary, r *Request) (known func() *Request, err error) {
	// No approval's receipt before its decision record: a client acts on
	// it, so the record is appended first (once; the outbox's own step
	// then finds it done). A replica that dies in between leaves both to
	// the outbox; an audit that fails leaves the approval unsealed. A
	// denial or expiry approves nothing: it is sealed at once, even while
	// the log cannot be written, and its record follows from the outbox.
	if g.Outbox != nil && r.Status == Approved {
		if err := g.auditDecisionOnce(ctx, r); err != nil {
			return nil, err
		}
	}
	rc := receiptOf(r)
	raw, err := n.SealReceipt(rc, g.now())
	if err != nil {
		return nil, err
	}
	g.sealed(raw, rc) // before its save wakes the waiters that read it
	return g.Store.SaveReceipt(ctx, r.ID, raw)
}

// sealed remembers a receipt this gateway just signed as opened: its
// waiters read these very bytes back, and need not verify the signature
// made a moment ago (true of raw whether or not the store keeps it). rc goes through JSON as the signed content did, so it
// is what opening raw would return.
func (g *Gateway) sealed(raw json.RawMessage, rc Receipt) {
	b, err := json.Marshal(rc)
	var opened Receipt
	if err != nil || json.Unmarshal(b, &opened) != nil {
		return
	}
	g.remember(raw, opened)
}

// errUnconfirmed is a final status the store's votes do not support.
type errUnconfirmed struct{ err error }

func (e errUnconfirmed) Error() string { return e.err.Error() }

// sealConfirmed seals r, decided in the store but not sealed by the
// gateway that decided it (it died, or its seal timed out), once the
// store confirms the decision from its votes. Denials and expiries are
// sealed as they are: they approve nothing. An errUnconfirmed says the
// status is not one a gateway decided; any other error, that it could not
// be checked now.
func (g *Gateway) sealConfirmed(ctx context.Context, r *Request) error {
	n := g.notary()
	if n == nil || len(r.Receipt) > 0 || !r.Status.Final() {
		return nil
	}
	if r.Status == Approved {
		if _, err := g.Store.ConfirmDecision(ctx, r); err != nil {
			if ErrorCode(err) == EConflict {
				return errUnconfirmed{err}
			}
			return err
		}
	}
	if _, err := g.saveSeal(ctx, n, r); err != nil {
		return err
	}
	// The first receipt saved stands (another replica may have sealed
	// meanwhile): read back the one kept.
	cur, err := g.Store.Get(ctx, r.ID)
	if err != nil {
		return err
	}
	r.Receipt = cur.Receipt
	return nil
}

func receiptOf(r *Request) Receipt {
	rc := Receipt{
		RequestID: r.ID, Persona: r.Persona, Kind: r.Kind, ActionDigest: ActionDigest(r.Kind, r.Action),
		Nonce: r.Nonce, Status: r.Status, DecidedBy: r.DecidedBy, Reason: r.DecisionReason,
	}
	if rc.DecidedBy == nil {
		rc.DecidedBy = []string{}
	}
	if r.DecidedAt != nil {
		rc.DecidedAt = r.DecidedAt.UTC()
	}
	return rc
}

// vouch makes r say only what its receipt says. A final status without a
// receipt this gateway signed for this very request and action reads as
// pending while its seal may still come, is sealed here when the store
// confirms it from its votes (sealConfirmed), and reads as denied when it
// does not — a status written into the store by hand: the decision fields
// come from the receipt, not from the store's fields.
func (g *Gateway) vouch(ctx context.Context, r *Request) *Request {
	n := g.notary()
	if r == nil || n == nil {
		return r
	}
	if !r.Status.Final() {
		r.Receipt = nil
		return r
	}
	why := "no receipt"
	if len(r.Receipt) == 0 && (r.DecidedAt == nil || !g.withinSealWindow(*r.DecidedAt)) {
		err := g.sealConfirmed(ctx, r)
		var uc errUnconfirmed
		switch {
		case errors.As(err, &uc):
			why = "no receipt, and " + ErrorMessage(uc.err)
		case err != nil:
			// Not checked now (the store is slow or away): still pending,
			// never denied for a seal that is late.
			g.log().Warn("seal a decided request on read; it reads pending", "id", r.ID, "err", err)
			r.Status, r.DecidedBy, r.DecidedAt, r.DecisionReason, r.Receipt = Pending, nil, nil, "", nil
			return r
		}
	}
	if len(r.Receipt) > 0 {
		rc, err := g.openReceipt(n, r.Receipt)
		switch {
		case err != nil:
			why = "receipt does not verify: " + ErrorMessage(err)
		case rc.RequestID != r.ID:
			why = "receipt is for request " + rc.RequestID
		case rc.ActionDigest != ActionDigest(r.Kind, r.Action) || rc.Kind != r.Kind:
			why = "receipt is for another action"
		case !rc.Status.Final():
			why = "receipt holds no decision"
		default:
			at := rc.DecidedAt
			r.Status, r.DecidedBy, r.DecidedAt, r.DecisionReason = rc.Status, append([]string(nil), rc.DecidedBy...), &at, rc.Reason
			return r
		}
	} else if r.DecidedAt != nil && g.withinSealWindow(*r.DecidedAt) {
		// Between the step that decided and its seal a request is briefly
		// final without a receipt, and reads pending.
		r.Status, r.DecidedBy, r.DecidedAt, r.DecisionReason, r.Receipt = Pending, nil, nil, "", nil
		return r
	}
	g.log().Warn("request is final in the store without a decision record signed by the gateway; treated as denied",
		"id", r.ID, "status", r.Status, "why", why)
	now := g.now().UTC()
	r.DecisionReason = "the store says " + string(r.Status) + " but holds no decision record signed by the gateway (" + why + "); not approved"
	r.Status, r.DecidedBy, r.DecidedAt, r.Receipt = Denied, nil, &now, nil
	return r
}

func (g *Gateway) withinSealWindow(decidedAt time.Time) bool {
	d := g.now().Sub(decidedAt)
	return d < SealWindow && d > -SealWindow
}

// load reads a request from the store; one the store calls decided whose
// receipt is still being sealed (a few milliseconds, by the gateway that
// decided) is read again for up to sealWait, so a reader is not told
// pending for a decision about to be sealed.
func (g *Gateway) load(ctx context.Context, id string) (*Request, error) {
	r, err := g.Store.Get(ctx, id)
	if err != nil || g.notary() == nil {
		return r, err
	}
	for wait := time.Duration(0); wait < sealWait && r.Status.Final() && len(r.Receipt) == 0 &&
		r.DecidedAt != nil && g.now().Sub(*r.DecidedAt) < SealWindow; wait += 5 * time.Millisecond {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		if r, err = g.Store.Get(ctx, id); err != nil {
			return r, err
		}
	}
	return r, nil
}

const sealWait = 500 * time.Millisecond

func (g *Gateway) vouchAll(ctx context.Context, rs []*Request) []*Request {
	for _, r := range rs {
		g.vouch(ctx, r)
	}
	return rs
}

// NewNonce returns a fresh random nonce for NewRequest.Nonce.
func NewNonce() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// openReceipt opens raw, remembering the last few thousand receipts it
// verified: every waiter on a request reads the same one.
func (g *Gateway) openReceipt(n Notary, raw []byte) (Receipt, error) {
	if rc, ok := g.receipts.get(string(raw)); ok {
		return rc, nil
	}
	rc, err := n.OpenReceipt(raw)
	if err != nil {
		return rc, err
	}
	g.remember(raw, rc)
	return rc, nil
}

func (g *Gateway) remember(raw []byte, rc Receipt) { g.receipts.put(string(raw), rc) }
