package permissions_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/grants"
	"github.com/signoff/signoff/bot/permissions"
	"github.com/signoff/signoff/bot/risk"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// askPeople makes a dangerous call into a request, as the hook does.
func (w *world) askPeople(t *testing.T, cmd, cwd string) *bot.Request {
	t.Helper()
	w.checker.MaxWait = time.Millisecond
	res := w.check(t, permissions.Check{Persona: "demo", Action: cmd, Cwd: cwd, Wait: true})
	if res.Decision != "ask" || res.Request == nil {
		t.Fatalf("%s: decision %s (%s), want ask with a request", cmd, res.Decision, res.Why)
	}
	if res.Request.GrantScope == nil {
		t.Fatalf("%s: the request carries no grant scope", cmd)
	}
	return res.Request
}

func (w *world) liveGrants(t *testing.T) []grants.Grant {
	t.Helper()
	gs, err := w.env.Store.Grants(context.Background(), "demo", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

func TestGrantByOwnersAlways(t *testing.T) {
	w := newWorld(t, "demo", "grantTTL: 2h\n")
	infra := w.dir("infra/net")
	r := w.askPeople(t, "terraform apply -auto-approve", infra)
	if got := r.GrantScope.Text(); !strings.HasPrefix(got, "`terraform apply`, with no operands; options `-auto-approve` or fewer, may add") || !strings.HasSuffix(got, "; in "+infra) {
		t.Errorf("scope text = %q", got)
	}
	out := w.env.React(t, w.alice, r, "♾️")
	if !out.Decided || !out.Grant || out.Status != bot.Approved {
		t.Fatalf("owner's ♾️: %+v, want decided, approved, grant", out)
	}
	gs := w.liveGrants(t)
	if len(gs) != 1 || gs[0].ID != r.ID || gs[0].By[0] != "alice" {
		t.Fatalf("grants = %+v, want one by alice", gs)
	}
	if d := gs[0].Expires.Sub(gs[0].Created); d != 2*time.Hour {
		t.Errorf("grant lasts %s, want the persona's grantTTL 2h", d)
	}

	// The same program and subcommand with other arguments, same workspace: covered.
	res := w.check(t, permissions.Check{Persona: "demo", Action: "terraform apply -target=module.db", Cwd: infra})
	if res.Decision != "allow" || res.By != permissions.ByGrant || res.Grant != r.ID {
		t.Errorf("covered call: %s by %s grant %q (%s)", res.Decision, res.By, res.Grant, res.Why)
	}
	// Never wider: another workspace, another subcommand, another program, a compound line.
	for _, tc := range []struct{ cmd, cwd string }{
		{"terraform apply -auto-approve", w.dir("app")},
		{"terraform destroy", infra},
		{"kubectl apply -f x.yaml", infra},
		{"terraform apply && rm -rf /", infra},
		{"sudo terraform apply", infra},
	} {
		res := w.check(t, permissions.Check{Persona: "demo", Action: tc.cmd, Cwd: tc.cwd})
		if res.Decision == "allow" || res.Grant != "" {
			t.Errorf("%q in %s: %s by %s (grant %q) — the grant widened", tc.cmd, tc.cwd, res.Decision, res.By, res.Grant)
		}
	}
	gs = w.liveGrants(t)
	if gs[0].Uses != 1 {
		t.Errorf("uses = %d, want 1", gs[0].Uses)
	}
	if n := len(w.audit(t, "grant")); n != 1 {
		t.Errorf("%d grant records in the audit, want 1", n)
	}
	if n := len(w.audit(t, "grant-used")); n != 1 {
		t.Errorf("%d grant-used records in the audit, want 1", n)
	}
}

func TestGrantByQuorumOfAlways(t *testing.T) {
	w := newWorld(t, "demo", "")
	r := w.askPeople(t, "terraform apply", w.dir("infra/net"))
	if out := w.env.React(t, w.bob, r, "♾️"); out.Decided {
		t.Fatalf("one member of two decided: %+v", out)
	}
	out := w.env.React(t, w.carol, r, "♾️")
	if !out.Decided || !out.Grant {
		t.Fatalf("quorum's ♾️: %+v, want decided with a grant", out)
	}
	gs := w.liveGrants(t)
	if len(gs) != 1 || strings.Join(gs[0].By, ",") != "bob,carol" {
		t.Fatalf("grants = %+v, want one by bob,carol", gs)
	}
	if d := gs[0].Expires.Sub(gs[0].Created); d != bot.DefaultGrantTTL {
		t.Errorf("grant lasts %s, want the default %s", d, bot.DefaultGrantTTL)
	}
}

func TestFewerThanQuorumApproveOnce(t *testing.T) {
	w := newWorld(t, "demo", "")
	infra := w.dir("infra/net")
	r := w.askPeople(t, "terraform apply", infra)
	w.env.React(t, w.bob, r, "♾️")
	out := w.env.React(t, w.carol, r, "✅")
	if !out.Decided || out.Grant || out.Status != bot.Approved {
		t.Fatalf("♾️ + ✅: %+v, want approved once, no grant", out)
	}
	if gs := w.liveGrants(t); len(gs) != 0 {
		t.Fatalf("grants = %+v, want none", gs)
	}
	if res := w.check(t, permissions.Check{Persona: "demo", Action: "terraform apply", Cwd: infra}); res.Decision != "ask" {
		t.Errorf("after an approval once, the same call is %s, want ask", res.Decision)
	}
}

func TestApprovalOnceNeverWidens(t *testing.T) {
	w := newWorld(t, "demo", "")
	infra := w.dir("infra/net")
	r := w.askPeople(t, "terraform apply", infra)
	if out := w.env.React(t, w.alice, r, "✅"); !out.Decided || out.Grant {
		t.Fatalf("owner's ✅: %+v", out)
	}
	if gs := w.liveGrants(t); len(gs) != 0 {
		t.Fatalf("an approval once made grants %+v", gs)
	}
	if res := w.check(t, permissions.Check{Persona: "demo", Action: "terraform apply", Cwd: infra}); res.Decision != "ask" {
		t.Errorf("same call after ✅: %s, want ask", res.Decision)
	}
}

func TestGrantCoversNothingRiskier(t *testing.T) {
	w := newWorld(t, "demo", "permissions:\n  bash:\n    \"git push *\": ask\n")
	app := w.dir("app")
	r := w.askPeople(t, "git push origin main", app) // caution, asked by the rule
	w.env.React(t, w.alice, r, "♾️")
	if res := w.check(t, permissions.Check{Persona: "demo", Action: "git push origin feature", Cwd: app}); res.By != permissions.ByGrant {
		t.Errorf("git push origin feature: %s by %s, want allowed by the grant", res.Decision, res.By)
	}
	if res := w.check(t, permissions.Check{Persona: "demo", Action: "git push --force origin main", Cwd: app}); res.Decision == "allow" {
		t.Errorf("a grant for a caution git push let a force push through (%s)", res.Why)
	}
}

func TestGrantExpires(t *testing.T) {
	w := newWorld(t, "demo", "grantTTL: 1h\n")
	infra := w.dir("infra/net")
	r := w.askPeople(t, "terraform apply", infra)
	w.env.React(t, w.alice, r, "♾️")
	w.checker.Now = func() time.Time { return time.Now().Add(61 * time.Minute) }
	if res := w.check(t, permissions.Check{Persona: "demo", Action: "terraform apply", Cwd: infra}); res.Decision != "ask" {
		t.Errorf("after grantTTL: %s by %s, want ask", res.Decision, res.By)
	}
}

// TestGrantRevokedOnAnotherReplica: a grant revoked through one gateway's
// store stops covering at once on a checker that shares only the Redis.
func TestGrantRevokedOnAnotherReplica(t *testing.T) {
	w := newWorld(t, "demo", "")
	infra := w.dir("infra/net")
	r := w.askPeople(t, "terraform apply", infra)
	w.env.React(t, w.alice, r, "♾️")

	other := qredis.New(w.env.Redis, w.prefix)
	replica := &permissions.Checker{Personas: other, Classifier: risk.Default(), Grants: other}
	ch := permissions.Check{Persona: "demo", Action: "terraform apply", Cwd: infra}
	if res, err := replica.Check(context.Background(), ch); err != nil || res.By != permissions.ByGrant {
		t.Fatalf("on the other replica before revoking: %+v %v", res, err)
	}
	m := &grants.Maker{Store: w.env.Store, Audit: w.env.Audit}
	if _, err := m.Revoke(context.Background(), r.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if res, err := replica.Check(context.Background(), ch); err != nil || res.Decision != "ask" {
		t.Errorf("on the other replica after revoking: %+v %v, want ask", res, err)
	}
	if _, err := m.Revoke(context.Background(), r.ID, "alice"); bot.ErrorCode(err) != bot.ENotFound {
		t.Errorf("revoking twice: %v, want not found", err)
	}
	if n := len(w.audit(t, "grant-revoked")); n != 1 {
		t.Errorf("%d grant-revoked records, want 1", n)
	}
}

// TestFreeTextRequestAlwaysApprovesOnce: a request with no scope (the
// agent asked in words) cannot become a grant.
func TestFreeTextRequestAlwaysApprovesOnce(t *testing.T) {
	w := newWorld(t, "demo", "")
	r := w.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy v2 to prod", Kind: bot.KindText})
	out := w.env.React(t, w.alice, r, "♾️")
	if !out.Decided || out.Status != bot.Approved {
		t.Fatalf("%+v", out)
	}
	if gs := w.liveGrants(t); len(gs) != 0 {
		t.Errorf("grants = %+v, want none", gs)
	}
}

// TestAgentCannotStretchAGrant: each grant the issue saw stretch, made by
// the owner's ♾️ on a real request, then the wider calls the agent made
// under it, through Check: none is allowed by the grant; the granted call
// itself still is.
func TestAgentCannotStretchAGrant(t *testing.T) {
	for _, c := range []struct {
		granted string
		wider   []string
	}{
		{"ssh prod sudo systemctl restart nginx", []string{"ssh prod sudo pip install evil", "ssh prod sudo make -f /tmp/x.mk"}},
		{"terraform destroy -target=module.scratch", []string{"terraform destroy"}},
		{"terraform apply -auto-approve", []string{"terraform apply -auto-approve -destroy"}},
		{"kubectl delete pod x", []string{"kubectl delete namespace prod"}},
		{"truncate log.txt", []string{"truncate log.txt important.db"}},
	} {
		t.Run(c.granted, func(t *testing.T) {
			// Every command asks, so only the grant can let one through.
			w := newWorld(t, "demo", "permissions:\n  bash:\n    \"*\": ask\n")
			app := w.dir("app")
			r := w.askPeople(t, c.granted, app)
			if out := w.env.React(t, w.alice, r, "♾️"); !out.Decided || !out.Grant {
				t.Fatalf("owner's ♾️: %+v", out)
			}
			for _, line := range c.wider {
				if res := w.check(t, permissions.Check{Persona: "demo", Action: line, Cwd: app}); res.Decision == "allow" || res.Grant != "" {
					t.Errorf("♾️ on %q let %q through: %s by %s (%s)", c.granted, line, res.Decision, res.By, res.Why)
				}
			}
			if res := w.check(t, permissions.Check{Persona: "demo", Action: c.granted, Cwd: app}); res.By != permissions.ByGrant {
				t.Errorf("%q under its own grant: %s by %s (%s)", c.granted, res.Decision, res.By, res.Why)
			}
		})
	}
}
