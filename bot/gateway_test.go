package bot_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/signing"
)

const expiredReason = "no one answered in time, and silence is not consent"

func TestOwnerApprovesByReaction(t *testing.T) {
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: bot.DefaultTimeout}
	env := bottest.New(t, p, nil)
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "rm -rf /tmp/x", Reason: "clean"})
	if r.Status != bot.Pending {
		t.Fatalf("status = %s, want pending", r.Status)
	}
	out := env.React(t, alice, r, "✅")
	if out.Result != bot.Counted || !out.Decided {
		t.Fatalf("outcome = %+v, want counted and decided", out)
	}
	got := env.Await(t, r.ID)
	if got.Status != bot.Approved || len(got.DecidedBy) != 1 || got.DecidedBy[0] != "alice" {
		t.Fatalf("got %s by %v, want approved by alice", got.Status, got.DecidedBy)
	}
	again := env.React(t, alice, r, "❌")
	if again.Result != bot.Ignored || again.Status != bot.Approved {
		t.Fatalf("flip = %+v, want ignored, still approved", again)
	}
}

// team is an owner, five members and the persona naming them.
type team struct {
	owner   bottest.Person
	members []bottest.Person
	agent   bottest.Person
	persona bot.Persona
}

func newTeam(name string, approvalQuorum, denyQuorum int) team {
	tm := team{owner: bottest.NewPerson("alice"), agent: bottest.NewPerson("agent")}
	tm.persona = bot.Persona{
		Name:           name,
		Agent:          []bot.Identity{tm.agent.Identity()},
		Owner:          &bot.Person{Name: "alice", Identities: []bot.Identity{tm.owner.Identity()}},
		ApprovalQuorum: approvalQuorum, DenyQuorum: denyQuorum,
		Proof: bot.ProofAny, Timeout: bot.DefaultTimeout,
	}
	for i := range 5 {
		m := bottest.NewPerson(fmt.Sprint("member", i+1))
		tm.members = append(tm.members, m)
		tm.persona.Members = append(tm.persona.Members, bot.Person{Name: m.Name, Identities: []bot.Identity{m.Identity()}})
	}
	return tm
}

// readAudit verifies the log at path and returns its records. It reads
// the file once: the log may still be signing a checkpoint meanwhile.
func readAudit(t *testing.T, env *bottest.Env) []signing.Record {
	t.Helper()
	b, err := os.ReadFile(env.AuditPath)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1] // a line still being written is not read
	}
	n, err := signing.VerifyAudit(bytes.NewReader(b), env.Key.PublicKey())
	if err != nil {
		t.Fatalf("audit log does not verify after %d records: %v", n, err)
	}
	var out []signing.Record
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r signing.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if len(out) != n {
		t.Fatalf("read %d records, verified %d", len(out), n)
	}
	return out
}

func countRecords(recs []signing.Record, typ, id string) int {
	n := 0
	for _, r := range recs {
		if r.Type == typ && r.RequestID == id {
			n++
		}
	}
	return n
}

// TestConcurrentVotesDecideOnce: 100 goroutines vote at once on one request
// (owner, members, strangers, the agent, and the same events delivered
// again). Exactly one CastVote decides, one decision is audited, and the
// log verifies.
func TestConcurrentVotesDecideOnce(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			tm := newTeam("demo", 3, 2)
			env := bottest.NewOn(t, srv.Client(t), srv.Prefix, tm.persona, nil)
			for round := range 3 {
				concurrentRound(t, env, tm, round)
			}
			env.Gateway.Close() // wait for the follow-up work
			decisions := 0
			for _, rec := range readAudit(t, env) {
				if rec.Type == "decision" {
					decisions++
				}
			}
			if decisions != 3 {
				t.Errorf("%d decision records in all, want 3", decisions)
			}
		})
	}
}

func concurrentRound(t *testing.T, env *bottest.Env, tm team, round int) {
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: fmt.Sprint("terraform destroy #", round), Reason: "race"})
	now := time.Now()
	var events [][]byte
	add := func(p bottest.Person, content string) {
		events = append(events, p.Reaction(r, content, now))
	}
	choices := []string{"✅", "❌"}
	for i := range 2 {
		add(tm.owner, choices[(i+round)%2])
	}
	for i, m := range tm.members {
		add(m, choices[(i+round)%2])
		add(m, choices[(i+round+1)%2])
	}
	add(tm.agent, "✅")
	for range 10 {
		add(bottest.NewPerson("stranger"), "✅")
	}
	add(tm.owner, "👍")
	distinct := len(events)
	// The rest are the same events delivered again.
	var ballots [][]byte
	for i := range 100 {
		ballots = append(ballots, events[i%distinct])
	}

	type result struct {
		out bot.VoteOutcome
		id  string
		err error
	}
	results := make([]result, len(ballots))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, raw := range ballots {
		wg.Go(func() {
			<-start
			re, err := signing.ParseReaction(raw, time.Now())
			if err != nil {
				results[i].err = err
				return
			}
			results[i].id = re.Event.ID
			results[i].out, results[i].err = env.Gateway.CastVote(context.Background(), re.Ballot(raw))
		})
	}
	close(start)
	wg.Wait()

	decided, firstDelivery := 0, map[string]int{}
	for i, res := range results {
		if res.err != nil {
			t.Fatalf("ballot %d: %v", i, res.err)
		}
		if res.out.Decided {
			decided++
		}
		if res.out.Result != bot.Duplicate {
			firstDelivery[res.id]++
		}
		if res.out.RequestID != r.ID {
			t.Errorf("ballot %d answered for %q, want %q", i, res.out.RequestID, r.ID)
		}
	}
	if decided != 1 {
		t.Errorf("round %d: %d ballots decided, want exactly 1", round, decided)
	}
	if len(firstDelivery) != distinct {
		t.Errorf("round %d: %d events got a non-duplicate answer, want %d", round, len(firstDelivery), distinct)
	}
	for id, n := range firstDelivery {
		if n != 1 {
			t.Errorf("round %d: event %s was taken %d times, want once", round, id, n)
		}
	}

	got := env.Await(t, r.ID)
	if got.Status != bot.Approved && got.Status != bot.Denied {
		t.Fatalf("round %d: status = %s, want approved or denied", round, got.Status)
	}
	if len(got.Votes) != distinct {
		t.Errorf("round %d: %d votes recorded, want %d", round, len(got.Votes), distinct)
	}
	// The decided_by must be what the counted votes imply.
	var approvers, deniers []string
	counted := 0
	for _, v := range got.Votes {
		if v.Result != bot.Counted {
			continue
		}
		counted++
		if v.Choice == bot.Approve {
			approvers = append(approvers, v.Name)
		} else {
			deniers = append(deniers, v.Name)
		}
	}
	slices.Sort(approvers)
	slices.Sort(deniers)
	var want []string
	switch {
	case len(got.DecidedBy) == 1 && got.DecidedBy[0] == "alice":
		want = []string{"alice"}
	case got.Status == bot.Approved:
		want = approvers
	default:
		want = deniers
	}
	if !slices.Equal(got.DecidedBy, want) {
		t.Errorf("round %d: %s by %v, but the counted votes say %v", round, got.Status, got.DecidedBy, want)
	}
	for _, v := range got.Votes {
		if v.Voter == tm.agent.Identity() && v.Result == bot.Counted {
			t.Errorf("round %d: the agent's vote counted", round)
		}
		if v.Name == "" && v.Result == bot.Counted {
			t.Errorf("round %d: a stranger's vote counted: %+v", round, v)
		}
	}
	// Each person counts at most once.
	names := map[string]int{}
	for _, v := range got.Votes {
		if v.Result == bot.Counted {
			names[v.Name]++
		}
	}
	for name, n := range names {
		if n > 1 {
			t.Errorf("round %d: %s counted %d times", round, name, n)
		}
	}

	env.Gateway.Close()
	recs := readAudit(t, env)
	if n := countRecords(recs, "decision", r.ID); n != 1 {
		t.Errorf("round %d: %d decision records, want 1", round, n)
	}
	if n := countRecords(recs, "vote", r.ID); n != distinct {
		t.Errorf("round %d: %d vote records, want %d (one per distinct event)", round, n, distinct)
	}
	if n := countRecords(recs, "request", r.ID); n != 1 {
		t.Errorf("round %d: %d request records, want 1", round, n)
	}
	if err := env.Gateway.Start(context.Background()); err != nil {
		t.Fatalf("restart gateway: %v", err)
	}
}

// TestDecisionDuringClose: a vote that decides while the gateway closes
// is still audited, and Close does not race the follow-up it starts.
func TestDecisionDuringClose(t *testing.T) {
	tm := newTeam("demo", 2, 1)
	env := bottest.New(t, tm.persona, nil)
	for i := range 20 {
		if i > 0 { // closed by the round before
			if err := env.Gateway.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: fmt.Sprint("x", i)})
		raw := tm.owner.Reaction(r, "✅", time.Now())
		re, err := signing.ParseReaction(raw, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			if out, err := env.Gateway.CastVote(context.Background(), re.Ballot(raw)); err != nil || !out.Decided {
				t.Errorf("vote = %+v, %v; want it to decide", out, err)
			}
		})
		wg.Go(env.Gateway.Close)
		wg.Wait()
		env.Gateway.Close()
		if n := countRecords(readAudit(t, env), "decision", r.ID); n != 1 {
			t.Errorf("round %d: %d decision records, want 1", i, n)
		}
	}
}

// TestExpiryBySweeper: nobody answers a 200ms request; the sweeper expires
// it, Wait returns it, and a late vote changes nothing.
func TestExpiryBySweeper(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			tm := newTeam("demo", 2, 1)
			env := bottest.NewOn(t, srv.Client(t), srv.Prefix, tm.persona, nil)
			start := time.Now()
			r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "git push --force", Timeout: bot.Duration(200 * time.Millisecond)})
			if r.Status != bot.Pending {
				t.Fatalf("status = %s, want pending", r.Status)
			}
			if d := r.Deadline.Sub(r.CreatedAt); d != 200*time.Millisecond {
				t.Errorf("deadline is %s after creation, want 200ms", d)
			}
			env.React(t, tm.members[0], r, "✅") // counted, short of quorum: Wait returns on it, still pending
			got := env.Await(t, r.ID)
			if elapsed := time.Since(start); got.Status != bot.Expired || elapsed < 200*time.Millisecond || elapsed > 4*time.Second {
				t.Fatalf("after %s: status = %s, want expired after 200ms", elapsed, got.Status)
			}
			if got.DecisionReason != expiredReason {
				t.Errorf("reason = %q, want %q", got.DecisionReason, expiredReason)
			}
			if len(got.DecidedBy) != 0 || got.DecidedAt == nil {
				t.Errorf("decided by %v at %v, want by no one, with a time", got.DecidedBy, got.DecidedAt)
			}
			if s := bot.Outcome(got); !strings.HasPrefix(s, "⌛ expired") {
				t.Errorf("outcome line = %q", s)
			}
			late := env.React(t, tm.owner, r, "✅")
			if late.Result != bot.Ignored || late.Status != bot.Expired || late.Decided {
				t.Errorf("late owner vote = %+v, want ignored, still expired", late)
			}
			env.Gateway.Close()
			recs := readAudit(t, env)
			if n := countRecords(recs, "decision", r.ID); n != 1 {
				t.Errorf("%d decision records, want 1", n)
			}
		})
	}
}

// TestTimeoutCannotLengthen: an agent may shorten its persona's timeout,
// never lengthen it.
func TestTimeoutCannotLengthen(t *testing.T) {
	tm := newTeam("demo", 2, 1)
	tm.persona.Timeout = time.Minute
	env := bottest.New(t, tm.persona, nil)
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "x", Timeout: bot.Duration(time.Hour)})
	if d := r.Deadline.Sub(r.CreatedAt); d != time.Minute {
		t.Errorf("deadline is %s after creation, want the persona's 1m", d)
	}
}

// fakeChannel records posts and updates; fail makes Post fail.
type fakeChannel struct {
	fail    error
	mu      sync.Mutex
	posts   int
	updates chan *bot.Request
}

func (f *fakeChannel) Post(ctx context.Context, r *bot.Request, p bot.Persona, c bot.ChannelConfig) ([]bot.MessageRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts++
	if f.fail != nil {
		return nil, f.fail
	}
	return []bot.MessageRef{{Platform: bot.Slack, Channel: c.Target, ID: "ts-" + r.ID}}, nil
}

func (f *fakeChannel) Update(ctx context.Context, r *bot.Request, refs []bot.MessageRef) error {
	f.updates <- r
	return nil
}

func (f *fakeChannel) Publish(context.Context, string, bot.ChannelConfig, string) (bot.MessageRef, error) {
	return bot.MessageRef{}, errors.New("fakeChannel publishes nothing")
}

// TestFailClosed: whatever keeps a request from a person denies it at once,
// with the reason.
func TestFailClosed(t *testing.T) {
	tm := newTeam("demo", 2, 1)
	ownerless := tm.persona
	ownerless.Name, ownerless.Owner = "ownerless", nil
	slackOnly := tm.persona
	slackOnly.Name, slackOnly.Channels = "slackonly", []bot.ChannelConfig{{Platform: bot.Slack, Target: "C0123"}}
	discordOnly := tm.persona
	discordOnly.Name, discordOnly.Channels = "discordonly", []bot.ChannelConfig{{Platform: bot.Discord, Target: "998877665544332211"}}
	broken := &fakeChannel{fail: errors.New("channel_not_found"), updates: make(chan *bot.Request, 1)}
	env := bottest.New(t, tm.persona, map[bot.Platform]bot.Channel{bot.Discord: broken})
	for _, p := range []bot.Persona{ownerless, slackOnly, discordOnly} {
		if err := env.Store.PutPersona(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		persona string
		reason  string
	}{
		{"ownerless", "has no owner"},
		{"slackonly", "no channel accepted"},
		{"discordonly", "channel_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.persona, func(t *testing.T) {
			r, err := env.Gateway.Submit(context.Background(), bot.NewRequest{Persona: tt.persona, Action: "rm -rf /"})
			if err != nil {
				t.Fatalf("submit: %v", err)
			}
			if r.Status != bot.Denied {
				t.Fatalf("status = %s, want denied", r.Status)
			}
			if !strings.Contains(r.DecisionReason, tt.reason) {
				t.Errorf("reason = %q, want it to mention %q", r.DecisionReason, tt.reason)
			}
			out := env.React(t, tm.owner, r, "✅")
			if out.Result != bot.Ignored || out.Status != bot.Denied {
				t.Errorf("owner's approval afterwards = %+v, want ignored, still denied", out)
			}
		})
	}
	if broken.posts != 1 {
		t.Errorf("broken channel got %d posts, want 1", broken.posts)
	}
}

func TestSubmitRefusesBadInput(t *testing.T) {
	tm := newTeam("demo", 2, 1)
	env := bottest.New(t, tm.persona, nil)
	tests := []struct {
		name string
		n    bot.NewRequest
		code string
	}{
		{"no persona", bot.NewRequest{Action: "x"}, bot.EInvalid},
		{"unknown persona", bot.NewRequest{Persona: "nobody", Action: "x"}, bot.ENotFound},
		{"no action", bot.NewRequest{Persona: "demo", Action: "  "}, bot.EInvalid},
		{"long action", bot.NewRequest{Persona: "demo", Action: strings.Repeat("a", bot.MaxActionLen+1)}, bot.EInvalid},
		{"long reason", bot.NewRequest{Persona: "demo", Action: "x", Reason: strings.Repeat("a", bot.MaxReasonLen+1)}, bot.EInvalid},
		{"not utf-8", bot.NewRequest{Persona: "demo", Action: "rm \xff"}, bot.EInvalid},
		{"bad kind", bot.NewRequest{Persona: "demo", Action: "x", Kind: "magic"}, bot.EInvalid},
		{"negative timeout", bot.NewRequest{Persona: "demo", Action: "x", Timeout: -1}, bot.EInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := env.Gateway.Submit(context.Background(), tt.n)
			if got := bot.ErrorCode(err); err == nil || got != tt.code {
				t.Errorf("Submit = %v, %v (%s); want an error %s", r, err, got, tt.code)
			}
		})
	}
}

// TestPostedChannelIsEdited: a request posted to a channel is found by its
// message and the message is edited once decided.
func TestPostedChannelIsEdited(t *testing.T) {
	tm := newTeam("demo", 2, 1)
	tm.persona.Channels = []bot.ChannelConfig{{Platform: bot.Slack, Target: "C0123"}}
	ch := &fakeChannel{updates: make(chan *bot.Request, 4)}
	env := bottest.New(t, tm.persona, map[bot.Platform]bot.Channel{bot.Slack: ch})
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
	if r.Status != bot.Pending {
		t.Fatalf("status = %s (%s), want pending", r.Status, r.DecisionReason)
	}
	ref := bot.MessageRef{Platform: bot.Slack, Channel: "C0123", ID: "ts-" + r.ID}
	if !slices.Contains(r.Messages, ref) {
		t.Fatalf("messages = %v, want %v among them", r.Messages, ref)
	}
	out, err := env.Gateway.CastVote(context.Background(), bot.Ballot{
		Ref: ref, Voter: tm.members[0].Identity(), Choice: bot.Deny, Proof: bot.ProofPlatform, DedupKey: "slack:Ev1",
	})
	if err != nil || !out.Decided || out.Status != bot.Denied {
		t.Fatalf("member veto = %+v, %v; want it to deny", out, err)
	}
	select {
	case got := <-ch.updates:
		if got.Status != bot.Denied || !slices.Equal(got.DecidedBy, []string{"member1"}) {
			t.Errorf("update shows %s by %v, want denied by member1", got.Status, got.DecidedBy)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("posted message not edited within 5s")
	}
}

// TestStoreUnreachable: with the store gone, Submit and CastVote fail with
// EUnavailable, and nothing is approved.
func TestStoreUnreachable(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			tm := newTeam("demo", 2, 1)
			client := srv.Client(t)
			env := bottest.NewOn(t, client, srv.Prefix, tm.persona, nil)
			r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "rm -rf /"})
			client.Close()

			_, err := env.Gateway.Submit(context.Background(), bot.NewRequest{Persona: "demo", Action: "rm -rf /"})
			if code := bot.ErrorCode(err); code != bot.EUnavailable {
				t.Errorf("Submit with the store gone = %v (%s), want %s", err, code, bot.EUnavailable)
			}
			raw := tm.owner.Reaction(r, "✅", time.Now())
			re, err := signing.ParseReaction(raw, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			out, err := env.Gateway.CastVote(context.Background(), re.Ballot(raw))
			if code := bot.ErrorCode(err); code != bot.EUnavailable {
				t.Errorf("CastVote with the store gone = %+v, %v (%s), want %s", out, err, code, bot.EUnavailable)
			}
			if out.Status == bot.Approved || out.Decided {
				t.Errorf("CastVote with the store gone = %+v, want nothing decided", out)
			}
			b := re.Ballot(raw)
			b.RequestID = r.ID
			if out, err := env.Gateway.CastVote(context.Background(), b); bot.ErrorCode(err) != bot.EUnavailable || out.Status == bot.Approved {
				t.Errorf("CastVote by id with the store gone = %+v, %v; want %s", out, err, bot.EUnavailable)
			}
			if _, err := env.Gateway.Wait(context.Background(), r.ID, time.Second); bot.ErrorCode(err) != bot.EUnavailable {
				t.Errorf("Wait with the store gone: err = %v, want %s", err, bot.EUnavailable)
			}
			got, err := srv.Store(t).Get(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != bot.Pending || len(got.Votes) != 0 {
				t.Errorf("request is %s with %d votes, want pending with none", got.Status, len(got.Votes))
			}
		})
	}
}

// TestReplayAndUnknownTarget: the same signed event delivered twice is a
// duplicate and changes nothing; a reaction to an event that is not a
// request is refused.
func TestReplayAndUnknownTarget(t *testing.T) {
	tm := newTeam("demo", 2, 1)
	env := bottest.New(t, tm.persona, nil)
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "rm -rf /"})
	raw := tm.members[0].Reaction(r, "✅", time.Now())
	cast := func() bot.VoteOutcome {
		t.Helper()
		re, err := signing.ParseReaction(raw, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		out, err := env.Gateway.CastVote(context.Background(), re.Ballot(raw))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := cast(); out.Result != bot.Counted || out.Status != bot.Pending {
		t.Fatalf("first delivery = %+v, want counted, pending", out)
	}
	for i := range 3 {
		if out := cast(); out.Result != bot.Duplicate || out.Status != bot.Pending || out.Decided {
			t.Errorf("replay %d = %+v, want duplicate, pending", i+1, out)
		}
	}
	got, err := env.Gateway.Get(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Votes) != 1 || got.Status != bot.Pending {
		t.Errorf("after replays: %s with %d votes, want pending with 1", got.Status, len(got.Votes))
	}

	other := *r
	other.EventID = strings.Repeat("0", 64)
	stray := tm.owner.Reaction(&other, "✅", time.Now())
	re, err := signing.ParseReaction(stray, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Gateway.CastVote(context.Background(), re.Ballot(stray)); bot.ErrorCode(err) != bot.ENotFound {
		t.Errorf("reaction to an unknown event: err = %v, want %s", err, bot.ENotFound)
	}
	// The request's own event is signed by the gateway and carries its id.
	ev, err := signing.VerifyEvent(r.Event)
	if err != nil {
		t.Fatalf("request event: %v", err)
	}
	if ev.ID != r.EventID || ev.PubKey != env.Key.PublicKey() || ev.Tags.GetFirst([]string{"signoff", r.ID}) == nil {
		t.Errorf("request event = %v, want id %s by the gateway with a signoff tag", ev, r.EventID)
	}
	env.Gateway.Close()
	recs := readAudit(t, env)
	if n := countRecords(recs, "vote", r.ID); n != 1 {
		t.Errorf("%d vote records, want 1 (duplicates are not audited)", n)
	}
}

// TestWaitManyOneSubscription: many waiters on one gateway are all woken by
// one decision.
func TestWaitManyOneSubscription(t *testing.T) {
	tm := newTeam("demo", 2, 1)
	env := bottest.New(t, tm.persona, nil)
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
	const waiters = 200
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for range waiters {
		wg.Go(func() {
			got, err := env.Gateway.Wait(context.Background(), r.ID, 10*time.Second)
			if err == nil && got.Status != bot.Approved {
				err = fmt.Errorf("woke with status %s", got.Status)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for env.Gateway.Waiting() < waiters && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	env.React(t, tm.owner, r, "✅")
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("waiters took %s to wake", d)
	}
	if n := env.Gateway.Waiting(); n != 0 {
		t.Errorf("%d waiters left", n)
	}
}

// BenchmarkVotePath: a fresh signed reaction per iteration, verified
// (signing.ParseReaction) and cast through the real gateway (one Lua
// script, plus the audit record). Fifty members with no approval quorum
// keep every vote counted; each request takes fifty.
func BenchmarkVotePath(b *testing.B) {
	for _, backend := range bottest.Backends() {
		b.Run(backend, func(b *testing.B) {
			srv := bottest.Start(b, backend)
			owner := bottest.NewPerson("alice")
			p := bot.Persona{Name: "bench", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{owner.Identity()}}, DenyQuorum: 1, Timeout: time.Hour}
			var members []bottest.Person
			for i := range 50 {
				m := bottest.NewPerson(fmt.Sprint("m", i))
				members = append(members, m)
				p.Members = append(p.Members, bot.Person{Name: m.Name, Identities: []bot.Identity{m.Identity()}})
			}
			env := bottest.NewOn(b, srv.Client(b), srv.Prefix, p, nil)
			now := time.Now()
			raws := make([][]byte, b.N)
			var r *bot.Request
			for i := range b.N {
				if i%len(members) == 0 {
					r = env.Submit(b, bot.NewRequest{Persona: "bench", Action: fmt.Sprint("deploy ", i)})
				}
				raws[i] = members[i%len(members)].Reaction(r, "✅", now)
			}
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				re, err := signing.ParseReaction(raws[i], now)
				if err != nil {
					b.Fatal(err)
				}
				out, err := env.Gateway.CastVote(ctx, re.Ballot(raws[i]))
				if err != nil || out.Result != bot.Counted {
					b.Fatalf("vote %d = %+v, %v", i, out, err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "votes/s")
		})
	}
}
