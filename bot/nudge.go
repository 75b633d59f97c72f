package bot

import (
	"context"
	"time"
)

// NudgeEvery is how often the sweeper looks for reminders and escalations due.
const NudgeEvery = 5 * time.Second

// Nudge does the reminders and escalations due at now: a persona's
// `remind: 2m` re-posts a pending request on each of its channels every
// two minutes; `escalate: {after: 3m, to: [bob]}` once, after three
// minutes, re-posts it and names bob. Each is audited. Neither changes who
// may decide. The sweeper calls it every NudgeEvery.
func (g *Gateway) Nudge(ctx context.Context, now time.Time) {
	// A request is read only when its persona reminds or escalates: its
	// snapshot is in memory, and with ten thousand requests pending under
	// personas that do neither, reading them all every NudgeEvery was ten
	// thousand reads (and their copies, tens of MB) for nothing.
	ids, err := g.Store.PendingIDs(ctx)
	if err != nil {
		return
	}
	for _, id := range ids {
		p, err := g.Store.Snapshot(ctx, id)
		if err != nil || (p.Remind <= 0 && p.Escalate == nil) {
			continue
		}
		r, err := g.Store.Get(ctx, id)
		if err != nil || r.Status != Pending {
			continue
		}
		waited := now.Sub(r.CreatedAt)
		ttl := r.Deadline.Sub(r.CreatedAt) + time.Hour
		if e := p.Escalate; e != nil && waited >= e.After {
			if won, _ := g.Store.ClaimNudge(ctx, r.ID, "escalate", ttl); won {
				esc := *r
				esc.Escalated = &Escalated{To: escalatees(p, e.To), Needs: ElectorateOf(p, r.Votes).Needs}
				refs := g.repost(ctx, &esc, p)
				g.audit(ctx, AuditEntry{Type: "escalate", RequestID: r.ID, Data: map[string]any{
					"to": e.To, "after": e.After.String(), "at": now.UTC(), "posted": len(refs),
				}})
				g.log().Info("request escalated", "id", r.ID, "to", e.To)
				continue // a reminder at the same moment would say it twice
			}
		}
		if p.Remind > 0 && waited >= p.Remind {
			n := int(waited / p.Remind)
			if won, _ := g.Store.ClaimNudge(ctx, r.ID, "remind:"+itoa(n), ttl); won {
				refs := g.repost(ctx, r, p)
				g.audit(ctx, AuditEntry{Type: "remind", RequestID: r.ID, Data: map[string]any{
					"n": n, "every": p.Remind.String(), "at": now.UTC(), "posted": len(refs),
				}})
			}
		}
	}
}

// repost posts r again on p's channels and records the new messages, so
// answers to them count and they are edited at the decision.
func (g *Gateway) repost(ctx context.Context, r *Request, p Persona) []MessageRef {
	refs, err := g.post(ctx, r, p)
	if err != nil {
		g.log().Warn("re-post request", "id", r.ID, "err", err)
	}
	if len(refs) > 0 {
		if err := g.Store.AddMessages(ctx, r.ID, refs); err != nil {
			g.log().Warn("record re-posted messages", "id", r.ID, "err", err)
		}
	}
	return refs
}

// escalatees are the persona's people named in to, in that order; a name
// that is no owner or member is kept, with no identity, so it is still
// named in plain text.
func escalatees(p Persona, to []string) []Person {
	people := p.Members
	if p.Owner != nil {
		people = append([]Person{*p.Owner}, people...)
	}
	out := make([]Person, 0, len(to))
	for _, name := range to {
		who := Person{Name: name}
		for _, q := range people {
			if q.Name == name {
				who = q
				break
			}
		}
		out = append(out, who)
	}
	return out
}

// nudgeIfDue runs Nudge at most every NudgeEvery; the sweeper calls it.
func (g *Gateway) nudgeIfDue(ctx context.Context, now time.Time) {
	g.mu.Lock()
	due := now.Sub(g.lastNudge) >= NudgeEvery
	if due {
		g.lastNudge = now
	}
	g.mu.Unlock()
	if due {
		g.Nudge(ctx, now)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
