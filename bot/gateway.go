package bot

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Limits on what an agent may submit.
const (
	MaxActionLen = 16 << 10
	MaxReasonLen = 4 << 10
)

// Gateway runs the request lifecycle. Set the fields, then Start it; Close
// stops its goroutines and waits for them.
type Gateway struct {
	Store      Store
	Signer     Signer
	Classifier Classifier // nil: every action is dangerous
	Audit      AuditLog   // nil: no audit log
	Channels   map[Platform]Channel
	Metrics    *Metrics // nil: none
	Logger     *slog.Logger
	Now        func() time.Time

	// Created, when set, is told of each request this replica creates
	// that people may answer (serve logs it and runs the persona's
	// notify command). It must return quickly; it gets a copy.
	Created func(r Request, p Persona)

	// Grants makes the grant of a request approved with "always" (nil:
	// such a request is approved once).
	Grants GrantMaker

	// Outbox, when set, delivers decisions' side effects from the store
	// (see outbox.go) instead of a goroutine of the deciding replica.
	Outbox Outbox
	// ClaimIdle is how long a taken outbox entry waits before another
	// replica claims it (default 2×PostTimeout+10s).
	ClaimIdle time.Duration
	consumer  string

	// SweepEvery is how often due requests are expired (default 500ms).
	SweepEvery time.Duration
	// PostTimeout bounds each channel's Post and Update (default 15s).
	PostTimeout time.Duration
	// WithdrawGrace: see WaitHeld (default DefaultWithdrawGrace).
	WithdrawGrace time.Duration
	// ProgressHold is how long after a voter's answer this gateway's
	// waiters hear of a vote that left the request pending (default
	// DefaultProgressHold; negative: at once). A decision is not held.
	ProgressHold time.Duration

	hub    hub
	local  inFlight // local.go
	cancel context.CancelFunc
	// receipts caches verified receipts by their raw JSON (openReceipt).
	receipts memo[Receipt]
	// audited holds requests whose decision record this gateway appended
	// (outbox.go: auditDecisionOnce).
	audited memo[struct{}]
	// justSealed holds what the store said of a request this gateway just
	// sealed (ReceiptStore's known), for its outbox delivery (deliver).
	justSealed memo[func() *Request]
	// subscribed counts the decision subscription's confirmations, the
	// first included (each wakes every waiter to look again).
	subscribed atomic.Int64
	done       <-chan struct{} // closed when the gateway stops
	lastNudge  time.Time       // guarded by mu
	wg         sync.WaitGroup
	// closed is set by Close; mu orders it with wg.Add in background, so no
	// follow-up is started while Close waits (a WaitGroup misuse).
	mu     sync.Mutex
	closed bool

	publishLimits publishLimits // publish.go
}

var _ Service = (*Gateway)(nil)
var _ VoteSink = (*Gateway)(nil)

func (g *Gateway) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func (g *Gateway) log() *slog.Logger {
	if g.Logger != nil {
		return g.Logger
	}
	return slog.Default()
}

// Start begins watching for decisions and sweeping deadlines. It returns
// once the decision subscription is in place. A gateway missing a required
// part is refused here, the part named (Missing), before anything starts.
func (g *Gateway) Start(ctx context.Context) error {
	if missing := g.Missing(); len(missing) > 0 {
		return Errorf(EInvalid, "gateway: cannot start without %s", strings.Join(missing, ", "))
	}
	if g.SweepEvery <= 0 {
		g.SweepEvery = 500 * time.Millisecond
	}
	if g.PostTimeout <= 0 {
		g.PostTimeout = 15 * time.Second
	}
	ctx, g.cancel = context.WithCancel(ctx)
	g.mu.Lock()
	g.done = ctx.Done()
	g.closed = false
	g.mu.Unlock()
	if g.Outbox != nil {
		g.consumer = "gw-" + NewID()
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			g.runOutbox(ctx)
		}()
	}
	ready := make(chan struct{})
	var once sync.Once
	g.wg.Add(2)
	go func() {
		defer g.wg.Done()
		heard := func(id string, known func() *Request) {
			if id == "" { // the subscription is (re)established
				once.Do(func() { close(ready) })
				n := g.subscribed.Add(1)
				// Decisions published while it was down were missed:
				// every waiter looks again. Told each time (at the start,
				// and after each reconnect): a waiter answered early by
				// it shows why in the log.
				woken := g.hub.wakeAll()
				g.log().Info("decision watch: subscribed; every waiter looks again", "confirmations", n, "waiters", woken)
				return
			}
			g.wakeLater(id, known)
		}
		KeepFollowing(ctx, g.log(), "decision watch", func(ctx context.Context) error {
			return g.Store.WatchNotices(ctx, heard)
		})
	}()
	go func() {
		defer g.wg.Done()
		t := time.NewTicker(g.SweepEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				g.sweep(ctx)
			}
		}
	}()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		g.Close()
		return Errorf(EUnavailable, "store: decision subscription not ready after 10s")
	}
}

// Missing names each required part of g that is not set: the Store and
// the Signer, and any platform in Channels mapped to no adapter. The rest
// is optional by a field of its own, said where it is declared (Audit,
// Outbox, Grants, Classifier, Metrics): nothing is discovered.
func (g *Gateway) Missing() []string {
	var missing []string
	if isNil(g.Store) {
		missing = append(missing, "Store (requests, votes, receipts, holds, audit commits: bot.Store)")
	}
	if isNil(g.Signer) {
		missing = append(missing, "Signer (signs posted requests and seals receipts: bot.Signer)")
	}
	// An optional part left unset is an interface nil; one set to a nil
	// pointer is a mistake that would panic later, not "none".
	if g.Audit != nil && isNil(g.Audit) {
		missing = append(missing, "Audit (a nil log: leave the field unset for none)")
	}
	if g.Outbox != nil && isNil(g.Outbox) {
		missing = append(missing, "Outbox (a nil outbox: leave the field unset for none)")
	}
	for p, c := range g.Channels {
		if isNil(c) {
			missing = append(missing, "Channel for "+string(p)+" (bot.Channel)")
		}
	}
	slices.Sort(missing)
	return missing
}

// isNil: v is nil, or an interface holding a nil pointer (a store
// variable declared and never opened).
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// Subscribed counts the decision subscription's confirmations: one when
// it is made, and one each time go-redis makes it anew after a cut (its
// channels are subscribed together, and confirmed as one). Each wakes
// every waiter to look again (one on a request that changed is answered),
// so a test that times waiters can tell such a wake from its own.
func (g *Gateway) Subscribed() int64 { return g.subscribed.Load() }

// Close stops the gateway's goroutines, including follow-up work, and
// waits for them.
func (g *Gateway) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	if g.cancel != nil {
		g.cancel()
	}
	g.wg.Wait()
	g.stopWaiters()
	if g.Outbox != nil && g.consumer != "" {
		g.drainOutbox()
	}
}

// sweep expires every due request; the gateway whose Resolve wins does the
// follow-up, so each expiry is handled once across replicas.
func (g *Gateway) sweep(ctx context.Context) {
	now := g.now()
	ids, err := g.Store.Due(ctx, now)
	if err != nil {
		if ctx.Err() == nil {
			g.log().Warn("sweep deadlines", "err", err)
		}
		return
	}
	for _, id := range ids {
		won, err := g.Store.Resolve(ctx, id, Expired, "no one answered in time, and silence is not consent", now)
		if err != nil {
			g.log().Warn("expire request", "id", id, "err", err)
			continue
		}
		if won {
			g.decided(id, Expired)
		}
	}
	g.nudgeIfDue(ctx, now)
}

// Submit classifies and stores a request, posts it to the persona's
// channels and returns it. A request that cannot be put before a person is
// decided at once: denied, with the reason.
func (g *Gateway) Submit(ctx context.Context, n NewRequest) (*Request, error) {
	return g.submit(ctx, n, "")
}

// submit is Submit; a non-empty denyOnly makes a request no vote can
// approve (see SubmitDenyOnly), with denyOnly among its reasons.
func (g *Gateway) submit(ctx context.Context, n NewRequest, denyOnly string) (*Request, error) {
	if err := validate(&n); err != nil {
		return nil, err
	}
	p, err := g.Store.Persona(ctx, n.Persona)
	if err != nil {
		return nil, err
	}

	now := g.now().UTC().Truncate(time.Millisecond)
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if n.Timeout > 0 && time.Duration(n.Timeout) < timeout {
		timeout = time.Duration(n.Timeout)
	}
	r := &Request{
		ID:        NewID(),
		Persona:   p.Name,
		Kind:      n.Kind,
		Action:    n.Action,
		Reason:    n.Reason,
		Nonce:     n.Nonce,
		Status:    Pending,
		CreatedAt: now,
		Deadline:  now.Add(timeout),
		Votes:     []Vote{},

		GrantScope: n.GrantScope,
	}
	a := Assessment{Level: Dangerous, Reasons: []string{"no classifier configured"}}
	if g.Classifier != nil {
		a = g.Classifier.Classify(n.Kind, n.Action)
	}
	r.Level, r.Reasons = a.Level, a.Reasons
	if r.Reasons == nil {
		r.Reasons = []string{}
	}
	electorate := p
	if denyOnly != "" {
		r.Reasons = append(r.Reasons, denyOnly)
		electorate = DenyOnly(p)
	}
	if err := g.signEvent(r, p); err != nil {
		return nil, err
	}
	// Recorded before it exists: a request the log cannot hold is refused.
	if err := g.auditOrRefuse(ctx, AuditEntry{Type: "request", RequestID: r.ID, Data: r, Evidence: r.Event}, "request"); err != nil {
		return nil, err
	}
	if err := g.Store.Create(ctx, r, electorate); err != nil {
		return nil, err
	}
	g.Metrics.submitted()
	// A live list (the console's feed) on any replica shows it at once.
	if err := g.Store.Created(context.WithoutCancel(ctx), r.ID); err != nil {
		g.log().Warn("publish request creation", "id", r.ID, "err", err)
	}
	// The request exists now: posting it, recording its messages and
	// answering finish even if the requester goes away meanwhile (its
	// connection closing must not leave posts unrecorded, nor a pending
	// request nobody withdraws: the API withdraws it after a grace).
	ctx = context.WithoutCancel(ctx)

	if p.Owner == nil {
		return g.resolveNow(ctx, r.ID, Denied, "persona "+p.Name+" has no owner, so no one may approve")
	}
	if g.Created != nil {
		g.Created(*r, p)
	}
	refs, err := g.post(ctx, r, p)
	added := false
	if len(refs) > 0 {
		if aerr := g.Store.AddMessages(ctx, r.ID, refs); aerr != nil {
			g.log().Error("record posted messages", "id", r.ID, "err", aerr)
		} else {
			added = true
		}
	}
	if err != nil {
		return g.resolveNow(ctx, r.ID, Denied, err.Error())
	}
	if len(refs) == 0 {
		// Posted on no platform (the API lists it): the answer is what
		// was written, with no read back. Only an answer through the API
		// could have changed it since; the caller's wait sees that.
		return g.describe(ctx, r, nil)
	}
	cur, err := g.Store.Get(ctx, r.ID)
	cur = g.vouch(ctx, cur)
	if err == nil && added && cur.Status.Final() {
		// Decided while it was being posted (a fast answer, a short
		// timeout): the follow-up may have read the message list before
		// these were added, so edit them too.
		g.background(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*g.PostTimeout+5*time.Second)
			defer cancel()
			g.edit(ctx, cur, refs)
		})
	}
	return g.describe(ctx, cur, err)
}

// validate checks and normalises what an agent submitted.
func validate(n *NewRequest) error {
	n.Action = strings.TrimSpace(n.Action)
	switch {
	case n.Persona == "":
		return Errorf(EInvalid, "persona is required")
	case n.Action == "":
		return Errorf(EInvalid, "action is required")
	case len(n.Action) > MaxActionLen:
		return Errorf(EInvalid, "action is longer than %d bytes", MaxActionLen)
	case len(n.Reason) > MaxReasonLen:
		return Errorf(EInvalid, "reason is longer than %d bytes", MaxReasonLen)
	case !utf8.ValidString(n.Action) || !utf8.ValidString(n.Reason):
		return Errorf(EInvalid, "action and reason must be UTF-8")
	case n.Timeout < 0:
		return Errorf(EInvalid, "timeout must be positive")
	}
	if n.Kind == "" {
		n.Kind = KindCommand
	}
	switch n.Kind {
	case KindCommand, KindTool, KindNetwork, KindText:
		return nil
	}
	return Errorf(EInvalid, "kind %q is not one of command, tool, network, text", n.Kind)
}

// Record appends to the audit log an action an agent ran without asking
// (a caution command through `signoff exec` or the hook). It classifies
// the action itself rather than trust the caller's verdict, and refuses
// to record a dangerous one as if it were fine: that must be asked.
func (g *Gateway) Record(ctx context.Context, n NewRequest) (Assessment, error) {
	if err := validate(&n); err != nil {
		return Assessment{}, err
	}
	if _, err := g.Store.Persona(ctx, n.Persona); err != nil {
		return Assessment{}, err
	}
	a := Assessment{Level: Dangerous, Reasons: []string{"no classifier configured"}}
	if g.Classifier != nil {
		a = g.Classifier.Classify(n.Kind, n.Action)
	}
	if a.Level == Dangerous {
		return a, Errorf(EConflict, "the gateway classifies this as dangerous (%s): ask for approval instead", strings.Join(a.Reasons, "; "))
	}
	if err := g.auditOrRefuse(ctx, AuditEntry{Type: "ran", Data: map[string]any{
		"persona": n.Persona, "kind": n.Kind, "action": n.Action, "reason": n.Reason,
		"level": a.Level, "reasons": a.Reasons, "at": g.now().UTC(),
	}}, "action"); err != nil {
		return a, err
	}
	return a, nil
}

// signEvent makes the request's own Nostr event: signed by the gateway,
// carrying the request id in a tag so two identical asks in the same
// second are still two events, and tagging every person with a Nostr key.
func (g *Gateway) signEvent(r *Request, p Persona) error {
	// The digest binds the event to the exact action: `signoff approve`
	// checks it before it signs a reaction to this event.
	tags := [][]string{{"t", "signoff"}, {"signoff", r.ID}, {"digest", ActionDigest(r.Kind, r.Action)}}
	seen := map[string]bool{}
	for _, person := range p.People() {
		for _, id := range person.Identities {
			if id.Platform == Nostr && !seen[id.ID] {
				seen[id.ID] = true
				tags = append(tags, []string{"p", id.ID})
			}
		}
	}
	raw, id, err := g.Signer.SignEvent(1, Summary(r), tags, r.CreatedAt)
	if err != nil {
		return Errorf(EInternal, "sign request event: %v", err)
	}
	r.Event, r.EventID, r.GatewayKey = raw, id, g.Signer.PublicKey()
	r.Messages = []MessageRef{{Platform: Nostr, ID: id}}
	return nil
}

// post puts r on every channel of p at once. It fails when no channel
// accepted it; a channel that failed while another accepted is logged.
func (g *Gateway) post(ctx context.Context, r *Request, p Persona) ([]MessageRef, error) {
	channels := p.Channels
	if len(channels) == 0 {
		channels = []ChannelConfig{{Platform: Terminal}}
	}
	var (
		mu       sync.Mutex
		refs     []MessageRef
		accepted int
		errs     []string
		wg       sync.WaitGroup
	)
	for _, c := range channels {
		if c.Platform == Terminal { // listed by the API: `signoff pending`
			accepted++
			continue
		}
		ch := g.Channels[c.Platform]
		if ch == nil {
			errs = append(errs, string(c.Platform)+": not configured on this gateway")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, g.PostTimeout)
			defer cancel()
			got, err := ch.Post(pctx, r, p, c)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				g.log().Warn("post request", "id", r.ID, "platform", c.Platform, "err", err)
				g.Metrics.postError(c.Platform)
				errs = append(errs, string(c.Platform)+": "+err.Error())
				return
			}
			accepted++
			refs = append(refs, got...)
		}()
	}
	wg.Wait()
	if accepted == 0 {
		return refs, errors.New("no channel accepted the request (" + strings.Join(errs, "; ") + ")")
	}
	return refs, nil
}

func (g *Gateway) resolveNow(ctx context.Context, id string, s Status, reason string) (*Request, error) {
	won, err := g.Store.Resolve(ctx, id, s, reason, g.now())
	if err != nil {
		return nil, err
	}
	if won {
		g.decided(id, s)
	}
	return g.Get(ctx, id)
}

// CastVote judges and records one ballot from any platform.
func (g *Gateway) CastVote(ctx context.Context, b Ballot) (VoteOutcome, error) {
	if b.RequestID == "" {
		id, err := g.Store.Lookup(ctx, b.Ref)
		if err != nil {
			return VoteOutcome{}, err
		}
		b.RequestID = id
	}
	if b.At.IsZero() {
		b.At = g.now()
	}
	id := b.RequestID
	g.local.begin(id) // ended here, or by localDecided once sealed
	out, err := g.tally(ctx, b)
	if err != nil {
		g.endLocal(id, false)
		return out, err
	}
	g.Metrics.vote(out.Result)
	if !out.Decided {
		if out.Recorded && !out.Notified {
			g.changed(ctx, id)
		}
		// This gateway's waiters on id, whose change notice was held back
		// meanwhile, are woken once the voter has its answer, and a moment
		// later (ProgressHold): their answers and next polls do not compete
		// with it on its way to the voter.
		// Its work is done meanwhile: the outbox's delivery of a decision
		// that follows does not wait for the hold.
		g.local.settle(id)
		after(ctx, func() { g.afterProgressHold(func() { g.endLocal(id, true) }) })
		return out, nil
	}
	if out.Grant && g.Grants != nil {
		g.makeGrant(ctx, id)
	}
	// The voter is answered from the tally; the receipt its waiters need
	// is sealed just after, off the voter's path, and once its answer is
	// sent when the caller said so (should this replica die first, the
	// outbox seals it). An ♾️ approval is sealed first: its voter reads
	// the grant back at once.
	st := out.Status
	if out.Grant {
		g.localDecided(id, st)
	} else {
		after(ctx, func() { g.background(func() { g.localDecided(id, st) }) })
	}
	return out, nil
}

// localDecided is decided for a vote this gateway tallied: the change
// notices held back meanwhile are answered by decided's own wake.
func (g *Gateway) localDecided(id string, s Status) { g.sealAndWake(id, s, true) }

// makeGrant makes the grant of a request just approved with "always",
// before the voter is answered. With an outbox, a failure (or this
// replica's death before it) leaves the grant to the outbox's delivery;
// without one it is logged and the request stays approved once.
func (g *Gateway) makeGrant(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	r, err := g.Store.Get(ctx, id)
	if err == nil {
		err = g.Grants.MakeGrant(ctx, r)
	}
	if err == nil && g.Outbox != nil {
		_, err = g.Outbox.MarkStep(ctx, id, "grant")
	}
	if err != nil {
		g.log().Error("make grant", "id", id, "err", err)
	}
}

// decided runs once per decision, on the gateway that made it: wake local
// waiters, audit the decision, edit every posted message. The follow-up
// outlives the call that decided, with its own deadline.
func (g *Gateway) decided(id string, s Status) { g.sealAndWake(id, s, false) }

func (g *Gateway) sealAndWake(id string, s Status, local bool) {
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	known := g.seal(sctx, id, s)
	cancel()
	// With the receipt just kept, and what the store last read of the
	// request still all it holds, the waiters answer without a read, and
	// so does the outbox's delivery here, which waits for this seal.
	if known != nil && g.Outbox != nil {
		g.justSealed.put(id, known)
	}
	if local {
		g.local.end(id, false) // a notice held back is this decision's: woken below
	}
	g.hub.wakeKnown(id, known)
	if g.Outbox != nil {
		return // delivered from the outbox
	}
	g.background(func() { g.followUp(id) })
}

// background runs fn on a goroutine Close waits for; once the gateway is
// closing it runs fn here, so a decision made then is still audited.
func (g *Gateway) background(fn func()) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		fn()
		return
	}
	g.wg.Add(1)
	g.mu.Unlock()
	go func() {
		defer g.wg.Done()
		fn()
	}()
}

// followUp audits a decision and edits the request's posted messages.
func (g *Gateway) followUp(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*g.PostTimeout+5*time.Second)
	defer cancel()
	r, err := g.Store.Get(ctx, id)
	if err != nil {
		g.log().Error("load decided request", "id", id, "err", err)
		return
	}
	g.log().Info("request decided", "id", id, "status", r.Status, "by", r.DecidedBy, "reason", r.DecisionReason)
	g.auditPersist(ctx, AuditEntry{Type: "decision", RequestID: id, Data: map[string]any{
		"status": r.Status, "decided_by": r.DecidedBy, "decided_at": r.DecidedAt, "reason": r.DecisionReason,
	}})
	g.Metrics.decision(r)
	g.edit(ctx, r, r.Messages)
}

// edit shows r's outcome on the given posted messages, platform by
// platform.
func (g *Gateway) edit(ctx context.Context, r *Request, refs []MessageRef) {
	byPlatform := map[Platform][]MessageRef{}
	for _, m := range refs {
		byPlatform[m.Platform] = append(byPlatform[m.Platform], m)
	}
	for p, refs := range byPlatform {
		if ch := g.Channels[p]; ch != nil {
			g.update(ctx, ch, r, refs)
		}
	}
}

// update edits a channel's messages, retrying a failure a few times; a
// failed edit is logged and never changes the decision.
func (g *Gateway) update(ctx context.Context, ch Channel, r *Request, refs []MessageRef) {
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		uctx, cancel := context.WithTimeout(ctx, g.PostTimeout)
		err := ch.Update(uctx, r, refs)
		cancel()
		if err == nil {
			return
		}
		g.Metrics.editError(refs[0].Platform)
		if attempt == 3 || ctx.Err() != nil {
			g.log().Error("edit posted messages", "id", r.ID, "platform", refs[0].Platform, "attempts", attempt, "err", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff *= 4
	}
}

func (g *Gateway) audit(ctx context.Context, e AuditEntry) {
	if g.Audit == nil {
		return
	}
	if err := g.Audit.Append(context.WithoutCancel(ctx), e); err != nil {
		g.log().Error("audit append", "type", e.Type, "id", e.RequestID, "err", err)
	}
}

// Get returns a request.
func (g *Gateway) Get(ctx context.Context, id string) (*Request, error) {
	r, err := g.load(ctx, id)
	return g.describe(ctx, g.vouch(ctx, r), err)
}

// List returns requests, newest last.
func (g *Gateway) List(ctx context.Context, f Filter) ([]*Request, error) {
	rs, err := g.Store.List(ctx, f)
	return g.vouchAll(ctx, rs), err
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewID returns a random request id: 16 lowercase base32 characters.
func NewID() string {
	b := make([]byte, 10)
	rand.Read(b)
	return strings.ToLower(idEncoding.EncodeToString(b))
}

// People returns the owner (if any) and the members.
func (p Persona) People() []Person {
	var out []Person
	if p.Owner != nil {
		out = append(out, *p.Owner)
	}
	return append(out, p.Members...)
}

// DefaultProgressHold is ProgressHold's default. A waiter's answer to a
// vote that decides nothing is work for this gateway and for the waiter's
// caller (a read, an answer, the next long-poll). Held until a moment
// after the voter's answer, it no longer takes the CPU that answer needs
// on its way; and votes on the same request that come within each other's
// hold (a committee answering together, or a busy gateway) are told to
// the waiter in one answer, not one each (measured: docs/performance.md,
// "Progress held 50 ms"). The hold is still too short for anyone watching
// progress to tell; a decision, which unblocks the agent, is never held.
// A notice is held at most progressHoldMax, however many votes come.
const DefaultProgressHold = 50 * time.Millisecond

// progressHoldMax bounds how long a change notice waits for this
// gateway's votes on its request to end: four holds (0: no bound, when
// progress is not held at all).
func (g *Gateway) progressHoldMax() time.Duration {
	return 4 * max(g.progressHold(), 0)
}

// progressHold is ProgressHold with its default.
func (g *Gateway) progressHold() time.Duration {
	if g.ProgressHold == 0 {
		return DefaultProgressHold
	}
	return g.ProgressHold
}

// afterProgressHold runs f once ProgressHold has passed.
func (g *Gateway) afterProgressHold(f func()) {
	d := g.progressHold()
	if d < 0 {
		f()
		return
	}
	time.AfterFunc(d, f)
}
