package grants

import (
	"context"
	"time"

	"github.com/signoff/signoff/bot"
)

// Maker makes grants from requests approved with "always"; it is the
// gateway's bot.GrantMaker. Using and revoking is Use and Revoke.
type Maker struct {
	Store Store
	Audit bot.Auditor // nil: not audited
	Now   func() time.Time
}

var _ bot.GrantMaker = (*Maker)(nil)

func (m *Maker) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// MakeGrant makes r's grant when r was approved with "always" by an
// electorate that may grant (the store marks it Always) and the call it
// asked about has a scope. Anything else approved r once: no grant.
func (m *Maker) MakeGrant(ctx context.Context, r *bot.Request) error {
	if r == nil || r.Status != bot.Approved || !r.Always || r.GrantScope == nil {
		return nil
	}
	ttl := r.GrantScope.TTL
	if ttl <= 0 {
		ttl = bot.DefaultGrantTTL
	}
	now := m.now().UTC().Truncate(time.Millisecond)
	g := Grant{
		ID: r.ID, Persona: r.Persona, Scope: *r.GrantScope.Clone(), Text: r.GrantScope.Text(),
		By: append([]string{}, r.DecidedBy...), Request: r.ID, Created: now, Expires: now.Add(ttl),
	}
	made, err := m.Store.PutGrant(ctx, g)
	if err != nil || !made {
		return err
	}
	return m.audit(ctx, "grant", g, nil)
}

// Use counts a use of g for a call the gateway let through on it; false
// when g is gone meanwhile (revoked, expired) and the call is not covered.
// A use that cannot be audited is an error: the call is not let through.
func (m *Maker) Use(ctx context.Context, g Grant, call map[string]any) (bool, error) {
	ok, err := m.Store.UseGrant(ctx, g.ID)
	if err != nil || !ok {
		return false, err
	}
	if err := m.audit(ctx, "grant-used", g, call); err != nil {
		return false, err
	}
	return true, nil
}

// Revoke ends a grant at once on every replica and audits who did.
func (m *Maker) Revoke(ctx context.Context, id, by string) (Grant, error) {
	g, err := m.Store.RevokeGrant(ctx, id)
	if err != nil {
		return g, err
	}
	return g, m.audit(ctx, "grant-revoked", g, map[string]any{"by": by})
}

func (m *Maker) audit(ctx context.Context, typ string, g Grant, extra map[string]any) error {
	if m.Audit == nil {
		return nil
	}
	data := map[string]any{"grant": g, "at": m.now().UTC()}
	for k, v := range extra {
		data[k] = v
	}
	return m.Audit.Append(context.WithoutCancel(ctx), bot.AuditEntry{Type: typ, RequestID: g.Request, Data: data})
}
