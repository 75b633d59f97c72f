package redis_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/quorum/quorumtest"
	qredis "github.com/signoff/signoff/quorum/redis"
)

const expiredReason = "no one answered in time, and silence is not consent"

// newRequest stores a pending request for p, created now with a deadline
// an hour away.
func newRequest(t testing.TB, s *qredis.Store, p bot.Persona) *bot.Request {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	r := &bot.Request{
		ID: bot.NewID(), Persona: p.Name, Kind: bot.KindCommand, Action: "rm -rf /tmp/x", Reason: "test",
		Status: bot.Pending, Level: bot.Dangerous, Reasons: []string{}, CreatedAt: now, Deadline: now.Add(time.Hour),
		EventID: strings.Repeat("ab", 32), Messages: []bot.MessageRef{{Platform: bot.Nostr, ID: strings.Repeat("ab", 32)}},
	}
	r.Messages[0].ID = bot.NewID() + bot.NewID() // unique per request
	if err := s.Create(context.Background(), r, p); err != nil {
		t.Fatalf("create: %v", err)
	}
	return r
}

// TestScenarios runs the shared quorum table against the store's Lua
// script, on the embedded server and on real Redis when configured.
func TestScenarios(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			s := bottest.Start(t, backend).Store(t)
			for _, sc := range quorumtest.Scenarios {
				t.Run(sc.Name, func(t *testing.T) { runScenario(t, s, sc) })
			}
		})
	}
}

func runScenario(t *testing.T, s *qredis.Store, sc quorumtest.Scenario) {
	runScenarioWith(t, s, sc, nil, s.RecordVote)
}

// runScenarioWith is runScenario with made(r) run on the request once it
// is created, and each ballot cast by cast.
func runScenarioWith(t *testing.T, s *qredis.Store, sc quorumtest.Scenario, made func(*bot.Request), cast func(context.Context, bot.Ballot) (bot.VoteOutcome, error)) {
	ctx := context.Background()
	r := newRequest(t, s, sc.Persona)
	if made != nil {
		made(r)
	}
	decided := 0
	var wantRecorded []bot.Result
	for i, b := range sc.Ballots {
		at := r.CreatedAt.Add(time.Duration(i+1) * time.Second)
		if b.Late {
			at = r.Deadline.Add(time.Duration(i) * time.Second)
		}
		key := b.DedupKey
		if key == "" {
			key = fmt.Sprintf("delivery-%d", i)
		}
		out, err := cast(ctx, bot.Ballot{
			RequestID: r.ID, Voter: b.Voter, Choice: b.Choice, Proof: b.ProofOf(), DedupKey: key, At: at,
		})
		if err != nil {
			t.Fatalf("ballot %d: %v", i+1, err)
		}
		if out.Result != b.Want {
			t.Errorf("ballot %d (%s %s) = %s (%s), want %s", i+1, b.Voter, b.Choice, out.Result, out.Reason, b.Want)
		}
		if out.Result == bot.Ignored && out.Reason == "" {
			t.Errorf("ballot %d ignored without a reason", i+1)
		}
		if out.RequestID != r.ID {
			t.Errorf("ballot %d: request id = %q, want %q", i+1, out.RequestID, r.ID)
		}
		if out.Grant && !out.Decided {
			t.Errorf("ballot %d: grant without the decision", i+1)
		}
		if out.Decided {
			decided++
			if out.Grant != sc.Grant {
				t.Errorf("ballot %d decided with grant = %v, want %v", i+1, out.Grant, sc.Grant)
			}
			if !out.Status.Final() {
				t.Errorf("ballot %d decided with status %s", i+1, out.Status)
			}
		}
		if b.Want != bot.Duplicate {
			wantRecorded = append(wantRecorded, b.Want)
		}
	}
	if sc.Expire {
		won, err := s.Resolve(ctx, r.ID, bot.Expired, expiredReason, r.Deadline.Add(time.Minute))
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		if won {
			decided++
		}
	}

	got, err := s.Get(ctx, r.ID)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Status != sc.Want.Status {
		t.Errorf("status = %s, want %s", got.Status, sc.Want.Status)
	}
	if got.Always != sc.Grant {
		t.Errorf("always = %v, want %v", got.Always, sc.Grant)
	}
	if !slices.Equal(got.DecidedBy, sc.Want.DecidedBy) {
		t.Errorf("decided by = %v, want %v", got.DecidedBy, sc.Want.DecidedBy)
	}
	wantDecided := 0
	if sc.Want.Status.Final() {
		wantDecided = 1
		if got.DecidedAt == nil {
			t.Errorf("decided_at not set on a %s request", got.Status)
		}
	}
	if decided != wantDecided {
		t.Errorf("decided %d times, want %d", decided, wantDecided)
	}
	if sc.Want.Status == bot.Expired && got.DecisionReason != expiredReason {
		t.Errorf("reason = %q, want %q", got.DecisionReason, expiredReason)
	}
	var recorded []bot.Result
	for _, v := range got.Votes {
		recorded = append(recorded, v.Result)
	}
	if !slices.Equal(recorded, wantRecorded) {
		t.Errorf("recorded votes = %v, want %v", recorded, wantRecorded)
	}
	due, err := s.Due(ctx, r.Deadline.Add(time.Hour))
	if err != nil {
		t.Fatalf("due: %v", err)
	}
	if pending := slices.Contains(due, r.ID); pending != (got.Status == bot.Pending) {
		t.Errorf("in the deadline index = %v with status %s", pending, got.Status)
	}
}

func TestVoteRecordNamesThePerson(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			s := bottest.Start(t, backend).Store(t)
			ctx := context.Background()
			r := newRequest(t, s, quorumtest.Persona(2, 1))
			at := time.Now().UTC().Truncate(time.Millisecond)
			if _, err := s.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: quorumtest.BobSlack, Choice: bot.Approve, Proof: bot.ProofPlatform, DedupKey: "d1", At: at}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: quorumtest.Mallory, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: "d2", At: at}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Votes) != 2 {
				t.Fatalf("%d votes recorded, want 2", len(got.Votes))
			}
			want := bot.Vote{Voter: quorumtest.BobSlack, Name: "bob", Choice: bot.Approve, Proof: bot.ProofPlatform, At: at, Result: bot.Counted}
			if v := got.Votes[0]; v.Voter != want.Voter || v.Name != want.Name || v.Choice != want.Choice || v.Proof != want.Proof || !v.At.Equal(want.At) || v.Result != want.Result || v.Why != "" {
				t.Errorf("vote 1 = %+v, want %+v", v, want)
			}
			if v := got.Votes[1]; v.Name != "" || v.Result != bot.Ignored || !strings.Contains(v.Why, "not an owner or member") {
				t.Errorf("vote 2 = %+v, want a nameless ignored vote saying why", v)
			}
		})
	}
}

// TestPersonaSnapshot: a request is decided by the persona it was created
// under, even by another gateway (no cache) after the file changed.
func TestPersonaSnapshot(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			s := srv.Store(t)
			ctx := context.Background()
			p := quorumtest.Persona(2, 1)
			if err := s.PutPersona(ctx, p); err != nil {
				t.Fatal(err)
			}
			r := newRequest(t, s, p)
			// The file now makes mallory the owner.
			p2 := p
			p2.Owner = &bot.Person{Name: "mallory", Identities: []bot.Identity{quorumtest.Mallory}}
			if err := s.PutPersona(ctx, p2); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Persona(ctx, "demo"); err != nil || got.Owner.Name != "mallory" {
				t.Fatalf("persona = %+v, %v; want the new one", got.Owner, err)
			}
			other := srv.Store(t)
			out, err := other.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: quorumtest.Mallory, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: "m"})
			if err != nil {
				t.Fatal(err)
			}
			if out.Result != bot.Ignored || out.Status != bot.Pending {
				t.Errorf("mallory's vote = %+v, want ignored, pending", out)
			}
			out, err = other.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: quorumtest.Alice, Choice: bot.Deny, Proof: bot.ProofSigned, DedupKey: "a"})
			if err != nil {
				t.Fatal(err)
			}
			if out.Result != bot.Counted || out.Status != bot.Denied || !out.Decided {
				t.Errorf("alice's vote = %+v, want counted, denied, decided", out)
			}
		})
	}
}

func TestStoreErrors(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			s := bottest.Start(t, backend).Store(t)
			ctx := context.Background()
			if _, err := s.Persona(ctx, "nobody"); bot.ErrorCode(err) != bot.ENotFound {
				t.Errorf("unknown persona: err = %v (%s), want %s", err, bot.ErrorCode(err), bot.ENotFound)
			}
			if _, err := s.Get(ctx, "nope"); bot.ErrorCode(err) != bot.ENotFound {
				t.Errorf("unknown request: err = %v, want %s", err, bot.ENotFound)
			}
			if _, err := s.RecordVote(ctx, bot.Ballot{RequestID: "nope", Voter: quorumtest.Alice, Choice: bot.Approve}); bot.ErrorCode(err) != bot.ENotFound {
				t.Errorf("vote on unknown request: err = %v, want %s", err, bot.ENotFound)
			}
			if _, err := s.Lookup(ctx, bot.MessageRef{Platform: bot.Nostr, ID: "nope"}); bot.ErrorCode(err) != bot.ENotFound {
				t.Errorf("lookup of unknown message: err = %v, want %s", err, bot.ENotFound)
			}
			if won, err := s.Resolve(ctx, "nope", bot.Denied, "x", time.Now()); err != nil || won {
				t.Errorf("resolve unknown = %v, %v; want false, nil", won, err)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			s := bottest.Start(t, backend).Store(t)
			ctx := context.Background()
			r := newRequest(t, s, quorumtest.Persona(2, 1))

			// Not due yet: expiry does nothing, and the request stays indexed.
			if won, err := s.Resolve(ctx, r.ID, bot.Expired, expiredReason, r.Deadline.Add(-time.Millisecond)); err != nil || won {
				t.Fatalf("early expiry = %v, %v; want false", won, err)
			}
			if due, _ := s.Due(ctx, r.Deadline); !slices.Contains(due, r.ID) {
				t.Fatalf("due at the deadline = %v, want it to hold %s", due, r.ID)
			}
			if due, _ := s.Due(ctx, r.Deadline.Add(-time.Millisecond)); slices.Contains(due, r.ID) {
				t.Fatalf("due before the deadline = %v, want it without %s", due, r.ID)
			}
			won, err := s.Resolve(ctx, r.ID, bot.Denied, "no channel accepted the request", time.Now())
			if err != nil || !won {
				t.Fatalf("deny = %v, %v; want true", won, err)
			}
			if won, err := s.Resolve(ctx, r.ID, bot.Expired, expiredReason, r.Deadline.Add(time.Minute)); err != nil || won {
				t.Errorf("second resolve = %v, %v; want false", won, err)
			}
			got, err := s.Get(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != bot.Denied || got.DecisionReason != "no channel accepted the request" || len(got.DecidedBy) != 0 {
				t.Errorf("got %s %q by %v, want denied with the first reason", got.Status, got.DecisionReason, got.DecidedBy)
			}
			if due, _ := s.Due(ctx, r.Deadline.Add(time.Hour)); slices.Contains(due, r.ID) {
				t.Errorf("a decided request is still in the deadline index")
			}
			out, err := s.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: quorumtest.Alice, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: "late"})
			if err != nil {
				t.Fatal(err)
			}
			if out.Result != bot.Ignored || out.Status != bot.Denied || out.Decided {
				t.Errorf("owner after denial = %+v, want ignored, still denied", out)
			}
		})
	}
}

func TestMessagesAndList(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			s := bottest.Start(t, backend).Store(t)
			ctx := context.Background()
			p := quorumtest.Persona(2, 1)
			a, b := newRequest(t, s, p), newRequest(t, s, p)
			slack := bot.MessageRef{Platform: bot.Slack, Channel: "C0123", ID: "1700000000.000100"}
			if err := s.AddMessages(ctx, a.ID, []bot.MessageRef{slack}); err != nil {
				t.Fatal(err)
			}
			for _, tt := range []struct {
				ref  bot.MessageRef
				want string
			}{{slack, a.ID}, {a.Messages[0], a.ID}, {b.Messages[0], b.ID}} {
				if id, err := s.Lookup(ctx, tt.ref); err != nil || id != tt.want {
					t.Errorf("lookup %s = %q, %v; want %q", tt.ref.Key(), id, err, tt.want)
				}
			}
			// The same message id in another channel is another message.
			if _, err := s.Lookup(ctx, bot.MessageRef{Platform: bot.Slack, Channel: "C0999", ID: slack.ID}); bot.ErrorCode(err) != bot.ENotFound {
				t.Errorf("lookup in another channel: err = %v, want not found", err)
			}
			got, err := s.Get(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Messages, []bot.MessageRef{a.Messages[0], slack}) {
				t.Errorf("messages = %v, want %v", got.Messages, []bot.MessageRef{a.Messages[0], slack})
			}
			if _, err := s.RecordVote(ctx, bot.Ballot{RequestID: b.ID, Voter: quorumtest.Alice, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: "x"}); err != nil {
				t.Fatal(err)
			}
			pending, err := s.List(ctx, bot.Filter{Status: bot.Pending})
			if err != nil {
				t.Fatal(err)
			}
			if len(pending) != 1 || pending[0].ID != a.ID {
				t.Errorf("pending = %v, want only %s", ids(pending), a.ID)
			}
			approved, err := s.List(ctx, bot.Filter{Status: bot.Approved})
			if err != nil {
				t.Fatal(err)
			}
			if len(approved) != 1 || approved[0].ID != b.ID {
				t.Errorf("approved = %v, want only %s", ids(approved), b.ID)
			}
			all, err := s.List(ctx, bot.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 2 {
				t.Errorf("all = %v, want both", ids(all))
			}
		})
	}
}

func ids(rs []*bot.Request) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID+":"+string(r.Status))
	}
	return out
}

// TestKeysCarryTheHashTag: every key of a request names it as {id}, so
// the scripts' keys share a Cluster slot.
func TestKeysCarryTheHashTag(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			c := srv.Client(t)
			s := qredis.New(c, srv.Prefix)
			ctx := context.Background()
			r := newRequest(t, s, quorumtest.Persona(2, 1))
			if _, err := s.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: quorumtest.Bob, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: "x"}); err != nil {
				t.Fatal(err)
			}
			keys, err := c.Keys(ctx, srv.Prefix+":req:*").Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) < 4 {
				t.Fatalf("request keys = %v, want at least 4", keys)
			}
			for _, k := range keys {
				if !strings.Contains(k, "{"+r.ID+"}") {
					t.Errorf("key %s does not carry {%s}", k, r.ID)
				}
			}
		})
	}
}

func TestWatch(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			s := srv.Store(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			got := make(chan string, 10)
			done := make(chan error, 1)
			go func() { done <- srv.Store(t).Watch(ctx, func(id string) { got <- id }) }()
			select {
			case id := <-got:
				if id != "" {
					t.Fatalf("first call = %q, want \"\" (subscribed)", id)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("not subscribed after 5s")
			}
			r := newRequest(t, s, quorumtest.Persona(2, 1))
			if _, err := s.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: quorumtest.Alice, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: "x"}); err != nil {
				t.Fatal(err)
			}
			select {
			case id := <-got:
				if id != r.ID {
					t.Errorf("decided = %q, want %q", id, r.ID)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no decision seen after 5s")
			}
			cancel()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Watch did not return after cancel")
			}
		})
	}
}

func BenchmarkRecordVote(b *testing.B) {
	for _, backend := range bottest.Backends() {
		b.Run(backend, func(b *testing.B) {
			s := bottest.Start(b, backend).Store(b)
			ctx := context.Background()
			// 50 members and no approval quorum: every vote is counted
			// and none decides; a request takes 50 votes.
			p, members := manyMembers(50)
			reqs := make([]string, (b.N+len(members)-1)/len(members))
			for i := range reqs {
				reqs[i] = newRequest(b, s, p).ID
			}
			b.ResetTimer()
			for i := range b.N {
				out, err := s.RecordVote(ctx, bot.Ballot{
					RequestID: reqs[i/len(members)], Voter: members[i%len(members)], Choice: bot.Approve,
					Proof: bot.ProofSigned, DedupKey: fmt.Sprint(i),
				})
				if err != nil || out.Result != bot.Counted {
					b.Fatalf("vote %d = %+v, %v", i, out, err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "votes/s")
		})
	}
}

// TestEmbeddedTTLFollowsClock: the embedded server's keys expire in real
// time, as a retention period needs.
func TestEmbeddedTTLFollowsClock(t *testing.T) {
	c, stop, err := qredis.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx := context.Background()
	if err := c.Set(ctx, "short", "x", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "long", "x", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Exists(ctx, "short").Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("a key with a 1s TTL still exists after 5s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if c.Exists(ctx, "long").Val() != 1 {
		t.Error("a key with a 1h TTL is gone")
	}
	if ttl := c.TTL(ctx, "long").Val(); ttl > time.Hour || ttl < 59*time.Minute {
		t.Errorf("TTL = %s, want just under 1h", ttl)
	}
}

// TestSyncPersonas: a persona whose file was deleted is removed from the
// store at the next start, so it can no longer be asked; the others stay.
func TestSyncPersonas(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			s := bottest.Start(t, backend).Store(t)
			ctx := context.Background()
			a, b := quorumtest.Persona(0, 1), quorumtest.Persona(0, 1)
			a.Name, b.Name = "kept", "dropped"
			if removed, err := s.SyncPersonas(ctx, []bot.Persona{a, b}); err != nil || len(removed) != 0 {
				t.Fatalf("first sync: %v, %v", removed, err)
			}
			removed, err := s.SyncPersonas(ctx, []bot.Persona{a})
			if err != nil || len(removed) != 1 || removed[0] != "dropped" {
				t.Fatalf("second sync removed %v, %v; want [dropped]", removed, err)
			}
			if _, err := s.Persona(ctx, "dropped"); bot.ErrorCode(err) != bot.ENotFound {
				t.Errorf("dropped persona still there: %v", err)
			}
			if _, err := s.Persona(ctx, "kept"); err != nil {
				t.Errorf("kept persona: %v", err)
			}
		})
	}
}
