package bot

import (
	"context"
	"fmt"
	"strings"
)

// Electorate is who may still decide a pending request, as its persona
// snapshot says, and the quorum arithmetic: what a person waiting on it
// (or `signoff show`) is told.
type Electorate struct {
	Owner          string      `json:"owner,omitempty"`
	Members        []string    `json:"members,omitempty"`
	ApprovalQuorum int         `json:"approval_quorum"`
	DenyQuorum     int         `json:"deny_quorum"`
	Proof          ProofPolicy `json:"proof,omitempty"`
	// Approvals and Denials are the counted members' votes so far.
	Approvals []string `json:"approvals,omitempty"`
	Denials   []string `json:"denials,omitempty"`
	// Undecided are the people who have not yet been counted.
	Undecided []string `json:"undecided,omitempty"`
	// Needs says what would approve it: "the owner (alice), or 1 more of: bob, carol".
	Needs string `json:"needs,omitempty"`
}

// ElectorateOf computes r's electorate from its persona snapshot and the
// votes counted so far. Pure: the tally itself is in the store.
func ElectorateOf(p Persona, votes []Vote) *Electorate {
	e := &Electorate{ApprovalQuorum: p.ApprovalQuorum, DenyQuorum: max(p.DenyQuorum, 1), Proof: p.Proof}
	counted := map[string]bool{}
	for _, v := range votes {
		if v.Result != Counted || v.Name == "" || counted[v.Name] {
			continue
		}
		counted[v.Name] = true
		if p.Owner != nil && v.Name == p.Owner.Name {
			continue
		}
		switch v.Choice {
		case Approve:
			e.Approvals = append(e.Approvals, v.Name)
		case Deny:
			e.Denials = append(e.Denials, v.Name)
		}
	}
	var others []string
	if p.Owner != nil {
		e.Owner = p.Owner.Name
		if !counted[p.Owner.Name] {
			e.Undecided = append(e.Undecided, p.Owner.Name)
		}
	}
	for _, m := range p.Members {
		e.Members = append(e.Members, m.Name)
		if !counted[m.Name] {
			e.Undecided = append(e.Undecided, m.Name)
			others = append(others, m.Name)
		}
	}
	var ways []string
	if e.Owner != "" && !counted[e.Owner] {
		ways = append(ways, "the owner ("+e.Owner+")")
	}
	if more := p.ApprovalQuorum - len(e.Approvals); p.ApprovalQuorum > 0 && more > 0 && len(others) >= more {
		ways = append(ways, fmt.Sprintf("%d more of: %s", more, strings.Join(others, ", ")))
	}
	if len(ways) == 0 {
		e.Needs = "no one left who can approve it"
	} else {
		e.Needs = strings.Join(ways, ", or ")
	}
	return e
}

// SnapshotStore is the store capability of reading the persona a request
// was created under; quorum/redis implements it.
type SnapshotStore interface {
	Snapshot(ctx context.Context, id string) (Persona, error)
}

// describe attaches the electorate to a pending request, when the store
// can tell it. A failure leaves the request as it is: it is only shown.
func (g *Gateway) describe(ctx context.Context, r *Request, err error) (*Request, error) {
	if err != nil || r == nil {
		return r, err
	}
	if s, ok := g.Store.(SnapshotStore); ok {
		if p, perr := s.Snapshot(ctx, r.ID); perr == nil {
			r.Electorate = ElectorateOf(p, r.Votes)
		}
	}
	return r, nil
}

// Notifier tells every gateway sharing the store that a request changed
// without being decided (a vote was recorded), so that long-polls on it
// return at once; quorum/redis implements it on the decision channel.
type Notifier interface {
	Changed(ctx context.Context, id string) error
}

// CreationNotifier tells every gateway sharing the store of each request
// created, for live lists; quorum/redis implements it.
type CreationNotifier interface {
	Created(ctx context.Context, id string) error
}

// changed wakes every waiter on id, on every replica.
func (g *Gateway) changed(ctx context.Context, id string) {
	if n, ok := g.Store.(Notifier); ok {
		if err := n.Changed(context.WithoutCancel(ctx), id); err != nil {
			g.log().Warn("publish request change", "id", id, "err", err)
		}
		return
	}
	g.hub.wake(id)
}
