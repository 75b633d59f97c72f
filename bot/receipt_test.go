package bot_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/grants"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

// lateSeals is the real store whose receipts cannot be saved before a
// given time, as under overload: a seal attempted earlier waits (and the
// deciding gateway's own, bounded by its 5 s, times out).
type lateSeals struct {
	*qredis.Store
	mu    sync.Mutex
	until time.Time
	saved []time.Time
}

func (s *lateSeals) SaveReceipt(ctx context.Context, id string, raw json.RawMessage) (func() *bot.Request, error) {
	s.mu.Lock()
	until := s.until
	s.mu.Unlock()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Until(until)):
	}
	known, err := s.Store.SaveReceipt(ctx, id, raw)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.saved = append(s.saved, time.Now())
	s.mu.Unlock()
	return known, nil
}

// TestApprovalSealedLateIsNotReadAsDenied: under overload the deciding
// gateway's seal times out and no receipt lands until a second past the
// seal window. The waiter used to read the approval as denied ("no
// decision record signed by the gateway") once the window passed; now it
// waits and is told approved when the seal (from the outbox, or its own
// read, confirmed from the votes) lands.
func TestApprovalSealedLateIsNotReadAsDenied(t *testing.T) {
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Minute}
	env := bottest.New(t, p, nil)
	env.Gateway.Close()
	slow := &lateSeals{Store: env.Store}
	env.Gateway.Store = slow
	if err := env.Gateway.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform destroy"})
	slow.mu.Lock()
	slow.until = time.Now().Add(bot.SealWindow + time.Second)
	slow.mu.Unlock()

	got := make(chan *bot.Request, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for {
			r, err := env.Gateway.Wait(ctx, r.ID, 30*time.Second)
			if err != nil || r.Status.Final() {
				got <- r
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	if out := env.React(t, alice, r, "✅"); !out.Decided || out.Status != bot.Approved {
		t.Fatalf("alice's ✅ = %+v, want it to approve", out)
	}
	select {
	case w := <-got:
		if w == nil || w.Status != bot.Approved {
			if w == nil {
				t.Fatal("the waiter got nothing, want approved")
			}
			t.Fatalf("the waiter got %s (%s), want approved", w.Status, w.DecisionReason)
		}
		if len(w.Receipt) == 0 {
			t.Fatal("approved without a receipt")
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the waiter was not answered")
	}
	slow.mu.Lock()
	defer slow.mu.Unlock()
	if len(slow.saved) == 0 || slow.saved[0].Before(slow.until) {
		t.Fatalf("receipts saved at %v, want none before %v", slow.saved, slow.until)
	}
	// Read again, by anyone, it stays approved.
	if again, err := env.Gateway.Get(context.Background(), r.ID); err != nil || again.Status != bot.Approved {
		t.Fatalf("read again: %+v, %v", again, err)
	}
}

// TestGrantOfAReplicaThatDiedIsMadeFromTheOutbox: the owner answers ♾️
// through replica A, which dies before it makes the grant (and before it
// delivers anything). Replica B claims the decision from the outbox and
// makes the grant, once; a revoked grant is not made again by a later
// delivery.
func TestGrantOfAReplicaThatDiedIsMadeFromTheOutbox(t *testing.T) {
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Minute}
	srv := bottest.Start(t, "embedded")
	a := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
	a.Gateway.Close() // A no longer delivers, and has no grant maker: it dies before either
	scope := &bot.GrantScope{Tool: "bash", Program: "terraform", Subcommand: "apply", Workspace: "/srv/infra", Level: bot.Dangerous, Reasons: []string{}, TTL: time.Hour}
	r := a.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform apply", GrantScope: scope})
	if out := a.React(t, alice, r, "♾️"); !out.Decided || !out.Grant {
		t.Fatalf("alice's ♾️ = %+v, want it to approve with a grant", out)
	}
	if _, err := a.Store.ReadOutbox(context.Background(), "replica-a", 10, -1, false); err != nil {
		t.Fatal(err)
	}
	if gs, _ := a.Store.Grants(context.Background(), "demo", time.Now()); len(gs) != 0 {
		t.Fatalf("grants before anyone delivered: %+v", gs)
	}

	b := bottest.NewOn(t, srv.Client(t), srv.Prefix, p, nil)
	b.Gateway.Close()
	b.Gateway.ClaimIdle = 200 * time.Millisecond
	b.Gateway.Grants = &grants.Maker{Store: b.Store, Audit: b.Audit}
	b.Gateway.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := b.Gateway.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var gs []grants.Grant
	for len(gs) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("replica B made no grant within 10s")
		}
		time.Sleep(20 * time.Millisecond)
		gs, _ = b.Store.Grants(context.Background(), "demo", time.Now())
	}
	if len(gs) != 1 || gs[0].Request != r.ID || gs[0].Scope.Program != "terraform" {
		t.Fatalf("grants = %+v, want the one of request %s", gs, r.ID)
	}
	if _, err := b.Gateway.Grants.(*grants.Maker).Revoke(context.Background(), gs[0].ID, "test"); err != nil {
		t.Fatal(err)
	}
	// The same decision delivered again (a retry) makes no grant.
	if err := b.Redis.XAdd(context.Background(), &goredis.XAddArgs{Stream: srv.Prefix + ":{outbox}", Values: []any{"id", r.ID}}).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if gs, _ := b.Store.Grants(context.Background(), "demo", time.Now()); len(gs) != 0 {
		t.Fatalf("a revoked grant came back: %+v", gs)
	}
	if n := countRecords(b.Chain(t), "grant", r.ID); n != 1 {
		t.Fatalf("%d grant records, want 1", n)
	}
}

// countingNotary is the gateway's real key, counting the receipts it opens.
type countingNotary struct {
	*signing.Key
	opened atomic.Int64
}

func (n *countingNotary) OpenReceipt(raw []byte) (bot.Receipt, error) {
	n.opened.Add(1)
	return n.Key.OpenReceipt(raw)
}

// TestWaiterOnTheSealingReplicaDoesNotVerifyItsReceiptAgain: the gateway
// that sealed a decision hands its waiters the receipt it just signed
// without verifying that signature again; another replica still verifies
// it (once).
func TestWaiterOnTheSealingReplicaDoesNotVerifyItsReceiptAgain(t *testing.T) {
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Minute}
	env := bottest.New(t, p, nil)
	env.Gateway.Close()
	key := &countingNotary{Key: env.Key}
	env.Gateway.Signer = key
	if err := env.Gateway.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform destroy"})
	if out := env.React(t, alice, r, "✅"); !out.Decided || out.Status != bot.Approved {
		t.Fatalf("alice's ✅ = %+v, want it to approve", out)
	}
	ctx := context.Background()
	for range 3 {
		got, err := env.Gateway.Wait(ctx, r.ID, 10*time.Second)
		if err != nil || got.Status != bot.Approved || len(got.Receipt) == 0 {
			t.Fatalf("wait = %+v, %v; want approved with a receipt", got, err)
		}
	}
	if n := key.opened.Load(); n != 0 {
		t.Errorf("the sealing replica verified its own receipt %d times, want 0", n)
	}

	// Another replica on the same store has not seen it: it verifies.
	other := &bot.Gateway{Store: env.Store, Signer: &countingNotary{Key: env.Key}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	got, err := other.Get(ctx, r.ID)
	if err != nil || got.Status != bot.Approved {
		t.Fatalf("other replica: %+v, %v; want approved", got, err)
	}
	if n := other.Signer.(*countingNotary).opened.Load(); n != 1 {
		t.Errorf("another replica opened the receipt %d times, want 1", n)
	}
}

// readsRefusedOnceSealed is the real store whose reads fail once a
// receipt is kept.
type readsRefusedOnceSealed struct {
	*qredis.Store
	sealed atomic.Bool
}

func (s *readsRefusedOnceSealed) SaveReceipt(ctx context.Context, id string, raw json.RawMessage) (func() *bot.Request, error) {
	known, err := s.Store.SaveReceipt(ctx, id, raw)
	if err == nil {
		s.sealed.Store(true)
	}
	return known, err
}

func (s *readsRefusedOnceSealed) Get(ctx context.Context, id string) (*bot.Request, error) {
	if s.sealed.Load() {
		return nil, bot.Errorf(bot.EUnavailable, "read after the seal")
	}
	return s.Store.Get(ctx, id)
}

// TestWaiterOnTheSealingReplicaIsAnsweredWithoutARead: the gateway that
// decided and sealed a request answers its waiter with the receipt it
// just kept, from what the seal read, not from another read of the
// request (here a read after the seal would fail the wait), and its
// outbox delivers the decision from it too (a read would fail it, and
// leave it in the outbox).
func TestWaiterOnTheSealingReplicaIsAnsweredWithoutARead(t *testing.T) {
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Minute}
	env := bottest.New(t, p, nil)
	env.Gateway.Close()
	store := &readsRefusedOnceSealed{Store: env.Store}
	env.Gateway.Store = store
	if err := env.Gateway.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform destroy"})
	type waited struct {
		r   *bot.Request
		err error
	}
	got := make(chan waited, 1)
	go func() {
		w, err := env.Gateway.Wait(context.Background(), r.ID, 30*time.Second)
		got <- waited{w, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); env.Gateway.Waiting() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the waiter did not park")
		}
	}
	if out := env.React(t, alice, r, "✅"); !out.Decided || out.Status != bot.Approved {
		t.Fatalf("alice's ✅ = %+v, want it to approve", out)
	}
	select {
	case w := <-got:
		if w.err != nil || w.r.Status != bot.Approved || len(w.r.Receipt) == 0 {
			t.Fatalf("wait = %+v, %v; want approved with a receipt, without reading the request again", w.r, w.err)
		}
		if !store.sealed.Load() {
			t.Fatal("answered before the receipt was kept")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter was not answered")
	}
	env.Gateway.Close() // waits for the delivery, and delivers what is left
	if left, err := env.Store.ClaimOutbox(context.Background(), "check", 0, 10); err != nil || len(left) != 0 {
		t.Fatalf("outbox still holds %v (%v): its delivery read the request", left, err)
	}
}
