package nostr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"slices"
	"sync"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// Config configures an Adapter. Key is required; everything else has a
// default.
type Config struct {
	// Key is the gateway's key: it signs kind-42 and kind-9 posts and the
	// replies announcing outcomes (the request's own event is signed by
	// the gateway already).
	Key *signing.Key
	// Relays are listened on from the start: the union of the relays the
	// personas name. Relays named in a Post are added as they come.
	Relays []string
	// Pending lists the requests still waiting for an answer, so that
	// after a restart their reactions are listened for again. Nil: none.
	Pending func(ctx context.Context) ([]*bot.Request, error)
	Logger  *slog.Logger
	Now     func() time.Time

	// MinBackoff and MaxBackoff bound the wait between reconnects
	// (defaults 500ms and 30s; each wait is jittered).
	MinBackoff, MaxBackoff time.Duration
	// DialTimeout bounds a websocket connect (default 10s);
	// PublishTimeout a publish and its OK on one relay (default 10s).
	DialTimeout, PublishTimeout time.Duration
	// VoteTimeout bounds the sink's CastVote for one reaction (default 10s).
	VoteTimeout time.Duration
	// SinceMargin is subtracted from the oldest watched request's
	// created_at in every subscription's `since`, for voters' clock skew
	// (default signing.MaxEventSkew).
	SinceMargin time.Duration
	// ResyncEvery is how often Pending is listed again and stale state
	// dropped (default 30s): it finds requests another gateway replica
	// posted and forgets ones decided elsewhere.
	ResyncEvery time.Duration
}

// Adapter posts requests to Nostr relays and turns reactions into ballots.
// Create it with New, start Run, and give it to the gateway as the
// bot.Nostr channel.
type Adapter struct {
	cfg  Config
	sink bot.VoteSink
	log  *slog.Logger

	mu       sync.Mutex
	relays   map[string]*relayLoop  // by normalized URL
	watched  map[string]string      // event id → request id, while pending
	requests map[string]*requestRec // request id
	seen     map[string]time.Time   // reaction ids cast (or being cast)
	runCtx   context.Context        // set while Run runs
	stopped  bool
	wg       sync.WaitGroup // relay loops and subscription readers
}

// requestRec is what the adapter knows of one request it watches or posted.
type requestRec struct {
	id        string
	createdAt time.Time
	deadline  time.Time
	eventIDs  []string
	posts     []post
	pending   bool      // its events are in the subscription filter
	local     bool      // Post ran here: posts is all there is to reply under
	added     time.Time // for resync: not dropped if added after a listing began
}

// post is one event the adapter published for a request.
type post struct {
	id     string
	mode   string
	root   string
	group  string
	relays []string
}

// relayLoop is one relay's connection loop and its current connection.
type relayLoop struct {
	url  string
	wake chan struct{} // the watch set changed: resubscribe

	mu   sync.Mutex
	conn *relayConn // nil while disconnected
}

func (rl *relayLoop) current() *relayConn {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.conn
}

func (rl *relayLoop) set(r *relayConn) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.conn = r
}

// Modes of a Nostr channel.
const (
	ModeNote  = "note"
	ModeNIP28 = "nip28"
	ModeNIP29 = "nip29"
)

// New checks cfg and returns an adapter handing ballots to sink.
func New(cfg Config, sink bot.VoteSink) (*Adapter, error) {
	if cfg.Key == nil {
		return nil, errors.New("nostr: the gateway key is required")
	}
	if sink == nil {
		return nil, errors.New("nostr: a vote sink is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	setDefault(&cfg.MinBackoff, 500*time.Millisecond)
	setDefault(&cfg.MaxBackoff, 30*time.Second)
	setDefault(&cfg.DialTimeout, 10*time.Second)
	setDefault(&cfg.PublishTimeout, 10*time.Second)
	setDefault(&cfg.VoteTimeout, 10*time.Second)
	setDefault(&cfg.SinceMargin, signing.MaxEventSkew)
	setDefault(&cfg.ResyncEvery, 30*time.Second)
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	a := &Adapter{
		cfg: cfg, sink: sink, log: cfg.Logger,
		relays:   map[string]*relayLoop{},
		watched:  map[string]string{},
		requests: map[string]*requestRec{},
		seen:     map[string]time.Time{},
	}
	urls, err := normalizeRelays(cfg.Relays)
	if err != nil {
		return nil, err
	}
	a.ensureRelays(urls)
	return a, nil
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

// normalizeRelays checks that each URL is ws:// or wss:// and returns them
// normalized and without repeats.
func normalizeRelays(in []string) ([]string, error) {
	var out []string
	for _, s := range in {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return nil, fmt.Errorf("nostr: relay %q is not a ws:// or wss:// URL", s)
		}
		n := gonostr.NormalizeURL(s)
		if n == "" {
			return nil, fmt.Errorf("nostr: relay %q is not a valid URL", s)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// ensureRelays adds a connection loop for each relay not known yet; while
// Run runs the loop starts at once, otherwise when Run starts.
func (a *Adapter) ensureRelays(urls []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, u := range urls {
		if _, ok := a.relays[u]; ok {
			continue
		}
		rl := &relayLoop{url: u, wake: make(chan struct{}, 1)}
		a.relays[u] = rl
		if a.runCtx != nil && !a.stopped {
			a.startLoop(a.runCtx, rl)
		}
	}
}

// startLoop runs rl's loop; a.mu is held.
func (a *Adapter) startLoop(ctx context.Context, rl *relayLoop) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.runRelay(ctx, rl)
	}()
}

// Run connects to every relay, listens for reactions and reconnects when a
// relay goes away, until ctx ends. It waits for all its goroutines.
func (a *Adapter) Run(ctx context.Context) error {
	a.mu.Lock()
	if a.runCtx != nil {
		a.mu.Unlock()
		return errors.New("nostr: Run called twice")
	}
	a.runCtx = ctx
	for _, rl := range a.relays {
		a.startLoop(ctx, rl)
	}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.stopped = true
		a.mu.Unlock()
		a.wg.Wait()
	}()

	a.resync(ctx)
	t := time.NewTicker(a.cfg.ResyncEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			a.resync(ctx)
		}
	}
}

// resync watches every pending request (a restart, or another replica's
// posts), forgets requests decided elsewhere or long past their deadline,
// and prunes the dedup memory.
func (a *Adapter) resync(ctx context.Context) {
	now := a.cfg.Now()
	began := time.Now()
	if a.cfg.Pending != nil {
		lctx, cancel := context.WithTimeout(ctx, a.cfg.VoteTimeout)
		rs, err := a.cfg.Pending(lctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("nostr: list pending requests", "err", err)
			}
		} else {
			pending := map[string]bool{}
			for _, r := range rs {
				if r.Status != bot.Pending {
					continue
				}
				pending[r.ID] = true
				var ids []string
				if r.EventID != "" {
					ids = append(ids, r.EventID)
				}
				for _, m := range r.Messages {
					if m.Platform == bot.Nostr && m.ID != "" {
						ids = append(ids, m.ID)
					}
				}
				a.watch(r, ids)
			}
			a.mu.Lock()
			for id, rec := range a.requests {
				if rec.pending && !pending[id] && rec.added.Before(began) {
					a.unwatchLocked(rec)
				}
			}
			a.mu.Unlock()
		}
	}
	a.mu.Lock()
	changed := false
	for id, rec := range a.requests {
		// Update normally forgets a request; this catches the rest.
		if now.After(rec.deadline.Add(time.Hour)) {
			changed = a.unwatchLocked(rec) || changed
			delete(a.requests, id)
		} else if rec.pending && now.After(rec.deadline.Add(time.Minute)) {
			changed = a.unwatchLocked(rec) || changed
		}
	}
	for id, at := range a.seen {
		if now.Sub(at) > signing.MaxEventAge+signing.MaxEventSkew+time.Minute {
			delete(a.seen, id)
		}
	}
	a.mu.Unlock()
	if changed {
		a.wakeAll()
	}
}

// watch adds r's events to the subscription filter of every relay.
func (a *Adapter) watch(r *bot.Request, eventIDs []string) {
	a.mu.Lock()
	rec := a.requests[r.ID]
	if rec == nil {
		rec = &requestRec{id: r.ID, createdAt: r.CreatedAt, deadline: r.Deadline, added: time.Now()}
		a.requests[r.ID] = rec
	}
	changed := !rec.pending
	rec.pending = true
	for _, id := range eventIDs {
		if !slices.Contains(rec.eventIDs, id) {
			rec.eventIDs = append(rec.eventIDs, id)
		}
		if _, ok := a.watched[id]; !ok {
			a.watched[id] = r.ID
			changed = true
		}
	}
	a.mu.Unlock()
	if changed {
		a.wakeAll()
	}
}

// unwatch stops listening for reactions to request id.
func (a *Adapter) unwatch(id string) {
	a.mu.Lock()
	changed := false
	if rec := a.requests[id]; rec != nil {
		changed = a.unwatchLocked(rec)
	}
	a.mu.Unlock()
	if changed {
		a.wakeAll()
	}
}

func (a *Adapter) unwatchLocked(rec *requestRec) bool {
	if !rec.pending {
		return false
	}
	rec.pending = false
	for _, id := range rec.eventIDs {
		if a.watched[id] == rec.id {
			delete(a.watched, id)
		}
	}
	return true
}

func (a *Adapter) wakeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, rl := range a.relays {
		select {
		case rl.wake <- struct{}{}:
		default:
		}
	}
}

// maxIDsPerFilter keeps each filter's #e list within what relays commonly
// accept; more pending events make more filters in the same REQ.
const maxIDsPerFilter = 256

// filters are the subscription every relay should have now; ok is false
// when nothing is pending.
func (a *Adapter) filters() (fs gonostr.Filters, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.watched) == 0 {
		return nil, false
	}
	ids := make([]string, 0, len(a.watched))
	var oldest time.Time
	for id, rid := range a.watched {
		ids = append(ids, id)
		if rec := a.requests[rid]; rec != nil && (oldest.IsZero() || rec.createdAt.Before(oldest)) {
			oldest = rec.createdAt
		}
	}
	slices.Sort(ids)
	if oldest.IsZero() {
		oldest = a.cfg.Now()
	}
	since := gonostr.Timestamp(oldest.Add(-a.cfg.SinceMargin).Unix())
	for chunk := range slices.Chunk(ids, maxIDsPerFilter) {
		// Reactions, and replies that tag the event (a reply naming another
		// event in the same thread is told apart in handleReply).
		fs = append(fs, gonostr.Filter{Kinds: []int{gonostr.KindReaction, gonostr.KindTextNote}, Tags: gonostr.TagMap{"e": chunk}, Since: &since})
	}
	return fs, true
}

// runRelay keeps one relay connected and subscribed until ctx ends.
func (a *Adapter) runRelay(ctx context.Context, rl *relayLoop) {
	backoff := a.cfg.MinBackoff
	for {
		began := time.Now()
		connected, err := a.session(ctx, rl)
		if ctx.Err() != nil {
			return
		}
		if connected && time.Since(began) > 10*time.Second {
			backoff = a.cfg.MinBackoff // it was up a while: retry soon
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		a.log.Warn("nostr: relay unavailable; reconnecting", "relay", rl.url, "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		backoff = min(backoff*2, a.cfg.MaxBackoff)
	}
}

// session connects once and keeps the subscription matching the watch set
// until the connection is lost or ctx ends.
func (a *Adapter) session(ctx context.Context, rl *relayLoop) (connected bool, err error) {
	closedSubs := make(chan [2]string, 1)
	dctx, cancel := context.WithTimeout(ctx, a.cfg.DialTimeout)
	c, err := dialRelay(dctx, rl.url, relayHandlers{
		event: func(_ string, raw json.RawMessage) { a.handle(ctx, rl.url, raw) },
		closed: func(sub, reason string) {
			select {
			case closedSubs <- [2]string{sub, reason}:
			default:
			}
		},
		notice: func(msg string) { a.log.Info("nostr: relay notice", "relay", rl.url, "notice", msg) },
	})
	cancel()
	if err != nil {
		return false, err
	}
	defer c.Close()
	rl.set(c)
	defer rl.set(nil)
	a.log.Info("nostr: relay connected", "relay", rl.url)

	// resubscribe opens the new subscription before closing the old one,
	// so nothing is missed in between; the overlap is deduplicated.
	cur := ""
	resubscribe := func() error {
		fs, ok := a.filters()
		if !ok {
			if old := cur; old != "" {
				cur = ""
				return c.CloseSub(old)
			}
			return nil
		}
		id, err := c.Req(fs)
		if err != nil {
			return err
		}
		old := cur
		cur = id
		if old != "" {
			return c.CloseSub(old)
		}
		return nil
	}
	if err := resubscribe(); err != nil {
		return true, err
	}
	for {
		select {
		case <-ctx.Done():
			return true, nil
		case <-c.Done():
			return true, fmt.Errorf("connection lost: %w", c.Err())
		case <-rl.wake:
			if err := resubscribe(); err != nil {
				return true, err
			}
		case cl := <-closedSubs:
			if cl[0] == cur {
				return true, fmt.Errorf("relay closed the subscription: %s", cl[1])
			}
		}
	}
}

// handle verifies one event a relay delivered, exactly as it came, and
// casts it as a ballot.
func (a *Adapter) handle(ctx context.Context, relay string, raw json.RawMessage) {
	var peek struct {
		ID   string `json:"id"`
		Kind int    `json:"kind"`
	}
	if json.Unmarshal(raw, &peek) == nil && peek.ID != "" && a.wasSeen(peek.ID) {
		a.log.Debug("nostr: duplicate reaction skipped", "relay", relay, "event", peek.ID)
		return
	}
	if peek.Kind == gonostr.KindTextNote {
		a.handleReply(ctx, relay, raw, peek.ID)
		return
	}
	re, err := signing.ParseReaction(raw, a.cfg.Now())
	if err != nil {
		a.log.Warn("nostr: reaction dropped", "relay", relay, "event", peek.ID, "err", err)
		return
	}
	// Claimed only once verified, so a forged copy of a real id cannot
	// shadow the real reaction arriving from another relay.
	if !a.claim(re.Event.ID) {
		a.log.Debug("nostr: duplicate reaction skipped", "relay", relay, "event", re.Event.ID)
		return
	}
	b := re.Ballot(raw)
	a.mu.Lock()
	if rid, ok := a.watched[re.Target]; ok {
		// Our own post: known even before the gateway indexed its ref.
		b.RequestID = rid
	}
	a.mu.Unlock()
	a.cast(ctx, relay, "reaction", b, re.Event.ID, re.Event.PubKey)
}

// cast hands a verified ballot to the sink; a store error unclaims the
// event so that a relay delivering it again retries.
func (a *Adapter) cast(ctx context.Context, relay, what string, b bot.Ballot, eventID, voter string) {
	vctx, cancel := context.WithTimeout(ctx, a.cfg.VoteTimeout)
	out, err := a.sink.CastVote(vctx, b)
	cancel()
	if err != nil {
		switch bot.ErrorCode(err) {
		case bot.ENotFound, bot.EInvalid, bot.EConflict:
			a.log.Info("nostr: "+what+" not counted", "relay", relay, "event", eventID, "err", err)
		default: // the store may be back when a relay delivers it again
			a.unclaim(eventID)
			a.log.Warn("nostr: cast vote", "relay", relay, "event", eventID, "err", err)
		}
		return
	}
	a.log.Info("nostr: "+what, "relay", relay, "event", eventID, "request", out.RequestID,
		"voter", voter, "vote", b.Choice, "result", out.Result, "reason", out.Reason, "status", out.Status)
	if out.Status.Final() {
		a.unwatch(out.RequestID)
	}
}

func (a *Adapter) wasSeen(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.seen[id]
	return ok
}

func (a *Adapter) claim(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.seen[id]; ok {
		return false
	}
	a.seen[id] = a.cfg.Now()
	return true
}

func (a *Adapter) unclaim(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.seen, id)
}
