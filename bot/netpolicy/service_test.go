package netpolicy_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/netpolicy"
	"github.com/signoff/signoff/signing"
)

type world struct {
	env   *bottest.Env
	svc   *netpolicy.Service
	alice bottest.Person
	bob   bottest.Person
}

const seed = "hosts:\n  - host: pypi.org\n    port: 443\n    access: read-only\n"

func newWorld(t *testing.T, boundary string, quorum int) *world {
	t.Helper()
	alice, bob := bottest.NewPerson("alice"), bottest.NewPerson("bob")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, Timeout: time.Hour}
	if quorum > 0 {
		p.Owner = &bot.Person{Name: "olga", Identities: []bot.Identity{{Platform: bot.Slack, ID: "UOLGA"}}}
		p.Members = []bot.Person{{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, {Name: "bob", Identities: []bot.Identity{bob.Identity()}}}
		p.ApprovalQuorum = quorum
	}
	env := bottest.New(t, p, nil)
	w := &world{env: env, alice: alice, bob: bob}
	w.svc = &netpolicy.Service{Gateway: env.Gateway, Store: env.Store, Decisions: env.Store.WatchFinal, Audit: env.Audit}
	if boundary != "" {
		b, ps := netpolicy.ParseBoundary("boundary.txt", []byte(boundary))
		if len(ps) > 0 {
			t.Fatal(ps)
		}
		w.svc.Boundary = b
	}
	if err := w.svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.svc.Close)
	if _, err := w.svc.Seed(context.Background(), "policy.yaml", []byte(seed)); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) file(t *testing.T, d netpolicy.Dest) *bot.Request {
	t.Helper()
	f, err := w.svc.FileRequest(context.Background(), "demo", d, "the build needs it")
	if err != nil {
		t.Fatalf("file %+v: %v", d, err)
	}
	if f.Request == nil {
		t.Fatalf("file %+v: nothing filed: %s", d, f.Message)
	}
	return f.Request
}

func ballot(t *testing.T, p bottest.Person, r *bot.Request, content string) *bot.Ballot {
	t.Helper()
	raw := p.Reaction(r, content, time.Now())
	re, err := signing.ParseReaction(raw, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b := re.Ballot(raw)
	return &b
}

func (w *world) status(t *testing.T, id string) bot.Status {
	t.Helper()
	r, err := w.env.Gateway.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r.Status
}

func TestApprovalMakesNextRevisionAndApprovesWhatItCovers(t *testing.T) {
	w := newWorld(t, "", 0)
	ctx := context.Background()
	every := w.file(t, netpolicy.Dest{Host: "proxy.golang.org", Port: 443, Program: "/usr/bin/go"})
	covered := w.file(t, netpolicy.Dest{Host: "proxy.golang.org", Port: 443, Program: "/usr/bin/go", Method: "GET", Path: "/x/@v/list"})
	other := w.file(t, netpolicy.Dest{Host: "example.com", Port: 443})

	ans, err := w.svc.Approve(ctx, every.ID[:6], ballot(t, w.alice, every, "✅"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	a := ans.Applied
	if a == nil || a.Revision != 2 || a.Change != netpolicy.Added {
		t.Fatalf("applied = %+v, want revision 2 added", a)
	}
	want := []string{"+ proxy.golang.org:443 read-write every method programs /usr/bin/go"}
	if !slices.Equal(a.Diff, want) {
		t.Fatalf("diff = %q, want %q", a.Diff, want)
	}
	if !slices.Equal(a.Also, []string{covered.ID}) {
		t.Fatalf("also approved %v, want only %s", a.Also, covered.ID)
	}
	if st := w.status(t, covered.ID); st != bot.Approved {
		t.Fatalf("covered request is %s", st)
	}
	if st := w.status(t, other.ID); st != bot.Pending {
		t.Fatalf("uncovered request is %s, want it left waiting", st)
	}
	rev, err := w.svc.Policy(ctx, 2)
	if err != nil || rev.Request != every.ID || !slices.Equal(rev.By, []string{"alice"}) || !slices.Equal(rev.Diff, want) {
		t.Fatalf("revision 2 = %+v, %v", rev, err)
	}
	if old, _ := w.svc.Policy(ctx, 1); len(old.Policy.Hosts) != 1 {
		t.Fatalf("revision 1 changed: %+v", old)
	}
	// Filing what is now allowed files nothing.
	f, err := w.svc.FileRequest(ctx, "demo", netpolicy.Dest{Host: "proxy.golang.org", Port: 443, Program: "/usr/bin/go", Method: "POST", Path: "/y"}, "r")
	if err != nil || f.Request != nil || f.AllowedBy == nil || f.AllowedBy.Revision != 2 {
		t.Fatalf("already allowed: %+v %v", f, err)
	}
}

func TestReactionInAChannelMakesTheRevision(t *testing.T) {
	w := newWorld(t, "", 0)
	r := w.file(t, netpolicy.Dest{Host: "api.github.com", Port: 443, Method: "POST", Path: "/repos/a/b/issues"})
	// The ✅ reaches the gateway as any channel's vote does, not through
	// the network endpoint: the service applies it from the decision.
	if out := w.env.React(t, w.alice, r, "✅"); out.Status != bot.Approved {
		t.Fatalf("vote: %+v", out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		rev, _ := w.svc.Policy(context.Background(), 0)
		if rev.N == 2 {
			if !slices.Equal(rev.Diff, []string{"+ api.github.com:443 read-write methods POST paths /repos/a/b/issues"}) {
				t.Fatalf("diff %q", rev.Diff)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no revision 2 after a channel approval (current %d)", rev.N)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBoundaryRefusesApprovalFromTerminalAndChannel(t *testing.T) {
	w := newWorld(t, "*.pypi.org:443\npypi.org:443\n", 0)
	ctx := context.Background()
	r := w.file(t, netpolicy.Dest{Host: "evil.example", Port: 443})
	if !slices.ContainsFunc(r.Reasons, func(s string) bool { return strings.Contains(s, "evil.example:443 is outside the network boundary") }) {
		t.Fatalf("the card does not say it cannot be approved: %q", r.Reasons)
	}
	_, err := w.svc.Approve(ctx, r.ID, ballot(t, w.alice, r, "✅"), "", nil)
	if bot.ErrorCode(err) != bot.EForbidden || !strings.Contains(err.Error(), "evil.example:443 is outside the network boundary") {
		t.Fatalf("terminal approval outside the boundary: %v", err)
	}
	// The owner's ✅ in a channel: counted as a person's answer, but it
	// cannot approve.
	out := w.env.React(t, w.alice, r, "✅")
	if out.Status != bot.Pending {
		t.Fatalf("a channel ✅ outside the boundary made the request %s", out.Status)
	}
	if rev, _ := w.svc.Policy(ctx, 0); rev.N != 1 {
		t.Fatalf("a revision was made: %d", rev.N)
	}
	// A denial always works.
	r2 := w.file(t, netpolicy.Dest{Host: "evil2.example", Port: 443})
	ans, err := w.svc.Deny(ctx, r2.ID, ballot(t, w.alice, r2, "❌"), "no exfiltration hosts")
	if err != nil || ans.Request.Status != bot.Denied {
		t.Fatalf("deny: %+v %v", ans, err)
	}
	l, _ := w.svc.List(ctx, false)
	if len(l.Requests) != 2 || l.Requests[1].DenyReason != "no exfiltration hosts" || l.Requests[0].Status != bot.Pending {
		t.Fatalf("listing %+v", l.Requests)
	}
}

func TestConcurrentApprovalsMakeConsecutiveRevisions(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t, "", 0)
			ctx := context.Background()
			const n = 6
			reqs := make([]*bot.Request, n)
			for i := range reqs {
				reqs[i] = w.file(t, netpolicy.Dest{Host: "h" + string(rune('a'+i)) + ".example.com", Port: 443})
			}
			var wg sync.WaitGroup
			revs := make([]int, n)
			errs := make([]error, n)
			for i, r := range reqs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ans, err := w.svc.Approve(ctx, r.ID, ballot(t, w.alice, r, "✅"), "", nil)
					errs[i] = err
					if err == nil && ans.Applied != nil {
						revs[i] = ans.Applied.Revision
					}
				}()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			slices.Sort(revs)
			if !slices.Equal(revs, []int{2, 3, 4, 5, 6, 7}) {
				t.Fatalf("revisions %v, want 2…7", revs)
			}
			cur, _ := w.svc.Policy(ctx, 0)
			if cur.N != 7 || len(cur.Policy.Hosts) != 1+n {
				t.Fatalf("current %d with %d entries, want 7 with %d: an approval was lost", cur.N, len(cur.Policy.Hosts), 1+n)
			}
		})
	}
}

func TestPolicyFromCopy(t *testing.T) {
	w := newWorld(t, "*.example.com:443\npypi.org:443\n", 0)
	ctx := context.Background()
	r := w.file(t, netpolicy.Dest{Host: "a.example.com", Port: 443, Method: "GET"})
	bad := []byte("hosts:\n  - host: a.example.com\n    port: 443\n    access: read-only-ish\n")
	if _, err := w.svc.Approve(ctx, r.ID, ballot(t, w.alice, r, "✅"), "copy.yaml", bad); err == nil || !strings.Contains(err.Error(), "copy.yaml:4") {
		t.Fatalf("invalid copy: %v", err)
	}
	outside := []byte(seed + "  - {host: a.example.com, port: 443, access: read-only}\n  - {host: evil.org, port: 443, access: read-only}\n")
	if _, err := w.svc.Approve(ctx, r.ID, ballot(t, w.alice, r, "✅"), "copy.yaml", outside); err == nil || !strings.Contains(err.Error(), "evil.org:443 is outside") {
		t.Fatalf("copy opening a host outside the boundary: %v", err)
	}
	if st := w.status(t, r.ID); st != bot.Pending {
		t.Fatalf("after failed copies the request is %s, want waiting", st)
	}
	good := []byte(seed + "  - host: \"*.example.com\"\n    port: 443\n    access: read-only\n")
	ans, err := w.svc.Approve(ctx, r.ID, ballot(t, w.alice, r, "✅"), "copy.yaml", good)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Applied.Change != netpolicy.Replaced || !slices.Equal(ans.Applied.Diff, []string{"+ *.example.com:443 read-only"}) {
		t.Fatalf("applied %+v", ans.Applied)
	}
}

func TestDraftsAreCountedAndKeptApart(t *testing.T) {
	w := newWorld(t, "", 0)
	ctx := context.Background()
	d := netpolicy.Dest{Host: "registry.npmjs.org", Port: 443, Program: "/usr/bin/node"}
	first, err := w.svc.FileDraft(ctx, "demo", d)
	if err != nil {
		t.Fatal(err)
	}
	if first.Reason != "Allow node to connect to registry.npmjs.org:443 (HTTPS)" {
		t.Fatalf("reason %q", first.Reason)
	}
	again, _ := w.svc.FileDraft(ctx, "demo", d)
	if again.ID != first.ID || again.Count != 2 {
		t.Fatalf("second refusal: %+v, want the same draft counted twice", again)
	}
	d.Program = "/usr/bin/curl"
	w.svc.FileDraft(ctx, "demo", d)
	if got, _ := w.svc.FileDraft(ctx, "demo", netpolicy.Dest{Host: "pypi.org", Port: 443}); got != nil {
		t.Fatalf("an allowed destination was drafted: %+v", got)
	}
	req := w.file(t, netpolicy.Dest{Host: "example.com", Port: 80, Method: "GET"})

	l, err := w.svc.List(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Requests) != 1 || l.Requests[0].ID != req.ID || l.Drafts != nil {
		t.Fatalf("requests %+v drafts %+v: drafts must not be listed among requests", l.Requests, l.Drafts)
	}
	if len(l.ByHost) != 1 || l.ByHost[0] != (netpolicy.HostCount{Dest: "registry.npmjs.org:443", Count: 3}) {
		t.Fatalf("by host %+v", l.ByHost)
	}
	l, _ = w.svc.List(ctx, true)
	if len(l.Drafts) != 2 {
		t.Fatalf("--all drafts %+v", l.Drafts)
	}
	// Approving a draft files it as a request first: nobody has been asked yet.
	ans, err := w.svc.Approve(ctx, first.ID[:8], nil, "", nil)
	if err != nil || ans.Filed == nil || ans.Filed.Request == nil {
		t.Fatalf("approve draft: %+v %v", ans, err)
	}
	nr := ans.Filed.Request
	ans, err = w.svc.Approve(ctx, nr.ID, ballot(t, w.alice, nr, "✅"), "", nil)
	if err != nil || ans.Applied == nil || ans.Applied.Revision != 2 {
		t.Fatalf("approve the filed draft: %+v %v", ans, err)
	}
}

func TestFakeApprovalsAreRefused(t *testing.T) {
	w := newWorld(t, "", 0)
	ctx := context.Background()
	a := w.file(t, netpolicy.Dest{Host: "a.com", Port: 443})
	b := w.file(t, netpolicy.Dest{Host: "b.com", Port: 443})
	// A reaction to request b replayed as an approval of a.
	if _, err := w.svc.Approve(ctx, a.ID, ballot(t, w.alice, b, "✅"), "", nil); err == nil || !strings.Contains(err.Error(), "another request") {
		t.Fatalf("a reaction to another request approved this one: %v", err)
	}
	// A ❌ sent to the approve endpoint.
	if _, err := w.svc.Approve(ctx, a.ID, ballot(t, w.alice, a, "❌"), "", nil); err == nil {
		t.Fatal("a ❌ was taken as an approval")
	}
	// A stranger's signed ✅ is recorded and ignored.
	ans, err := w.svc.Approve(ctx, a.ID, ballot(t, bottest.NewPerson("mallory"), a, "✅"), "", nil)
	if err != nil || ans.Vote.Result != bot.Ignored || ans.Applied != nil {
		t.Fatalf("stranger: %+v %v", ans, err)
	}
	if st := w.status(t, a.ID); st != bot.Pending {
		t.Fatalf("request is %s", st)
	}
	if _, err := w.svc.Deny(ctx, a.ID, ballot(t, w.alice, a, "❌"), ""); err == nil {
		t.Fatal("a denial without a reason was accepted")
	}
}

func TestQuorumStillApplies(t *testing.T) {
	w := newWorld(t, "", 2)
	ctx := context.Background()
	r := w.file(t, netpolicy.Dest{Host: "a.com", Port: 443})
	ans, err := w.svc.Approve(ctx, r.ID, ballot(t, w.alice, r, "✅"), "", nil)
	if err != nil || ans.Applied != nil || ans.Request.Status != bot.Pending {
		t.Fatalf("one of two members: %+v %v", ans, err)
	}
	ans, err = w.svc.Approve(ctx, r.ID, ballot(t, w.bob, r, "✅"), "", nil)
	if err != nil || ans.Applied == nil || ans.Applied.Revision != 2 {
		t.Fatalf("second member: %+v %v", ans, err)
	}
}

func TestIDPrefixes(t *testing.T) {
	w := newWorld(t, "", 0)
	ctx := context.Background()
	r := w.file(t, netpolicy.Dest{Host: "a.com", Port: 443})
	rec, _, err := w.svc.Resolve(ctx, strings.ToUpper(r.ID[:4]))
	if err != nil || rec.ID != r.ID {
		t.Fatalf("prefix: %v %v", rec, err)
	}
	for _, bad := range []string{"", "zzzzzzzzzzzzzzzzzz", strings.Repeat("a", 100)} {
		if _, _, err := w.svc.Resolve(ctx, bad); err == nil {
			t.Errorf("Resolve(%q) found something", bad)
		}
	}
}

func TestWidenedBoundaryLetsANewRequestBeApproved(t *testing.T) {
	w := newWorld(t, "pypi.org:443\n", 0)
	ctx := context.Background()
	old := w.file(t, netpolicy.Dest{Host: "later.example", Port: 443})
	again := w.file(t, netpolicy.Dest{Host: "later.example", Port: 443})
	if again.ID != old.ID {
		t.Fatalf("a second ask for the same door filed %s beside %s", again.ID, old.ID)
	}
	b, _ := netpolicy.ParseBoundary("boundary.txt", []byte("pypi.org:443\nlater.example:443\n"))
	w.svc.Boundary = b
	if _, err := w.svc.Approve(ctx, old.ID, ballot(t, w.alice, old, "✅"), "", nil); bot.ErrorCode(err) != bot.EForbidden {
		t.Fatalf("the deny-only request stays deny-only: %v", err)
	}
	fresh := w.file(t, netpolicy.Dest{Host: "later.example", Port: 443})
	if fresh.ID == old.ID {
		t.Fatal("the deny-only request was returned for a door now inside the boundary")
	}
	if ans, err := w.svc.Approve(ctx, fresh.ID, ballot(t, w.alice, fresh, "✅"), "", nil); err != nil || ans.Applied == nil || ans.Applied.Revision != 2 {
		t.Fatalf("approve the new request: %+v %v", ans, err)
	}
}
