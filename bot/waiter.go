package bot

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Wait returns the request as soon as it changes (a vote recorded, a
// decision), or when d has passed. Waiters are woken by the gateway's
// single subscription.
func (g *Gateway) Wait(ctx context.Context, id string, d time.Duration) (*Request, error) {
	type answer struct {
		r   *Request
		err error
	}
	ch := make(chan answer, 1)
	r, w, err := g.WaitFunc(ctx, id, d, -1, func(r *Request, err error) { ch <- answer{r, err} })
	if w == nil {
		return r, err
	}
	select {
	case a := <-ch:
		return a.r, a.err
	case <-ctx.Done():
		if w.Stop() {
			return nil, ctx.Err()
		}
		a := <-ch // done is already on its way
		return a.r, a.err
	}
}

// Waiter is one wait parked on the gateway by WaitFunc: a few hundred
// bytes and a runtime timer, no goroutine, until it is woken.
type Waiter struct {
	g     *Gateway
	id    string
	done  func(*Request, error)
	state atomic.Bool // finished: done called or Stop won
	in    bool        // in the hub; guarded by hub.mu
	held  bool        // WaitHeldFunc: the requester's own wait
	holds int64       // its Hold count when it began
	seen  int         // the Request.Seen its caller has seen; -1: none
	floor int         // the Request.Seen of the read it parked after (or seen); guarded by mu

	mu      sync.Mutex // serializes looks
	tmu     sync.Mutex // guards the timers
	timer   *time.Timer
	recheck *time.Timer
}

// waitLookTimeout bounds each store read a woken waiter makes: its
// caller's context is not held while it is parked.
const waitLookTimeout = 10 * time.Second

// WaitFunc is Wait for a caller that does not keep a goroutine blocked
// while it waits (the HTTP long-poll parks its connection). When the
// answer is known at once (the request is final or missing, or d <= 0) it
// is returned with a nil *Waiter and done is never called. Otherwise done
// is called exactly once, on another goroutine, with what Wait would
// return — unless Stop is called first.
//
// seen, when not negative, is the Request.Seen of the caller's last
// answer on id: a request that changed since (a vote stored meanwhile) is
// answered at once, and one that did not is parked after a look at its
// status and its count of answers alone (ChangeStore), not a read of it
// all.
func (g *Gateway) WaitFunc(ctx context.Context, id string, d time.Duration, seen int, done func(*Request, error)) (*Request, *Waiter, error) {
	w := &Waiter{g: g, id: id, done: done, seen: seen, floor: seen}
	g.hub.add(w) // before the read, so a decision in between still wakes us
	if seen >= 0 && d > 0 {
		if same, err := g.Store.Unchanged(ctx, id, seen); err == nil && same {
			return nil, w.park(d), nil
		}
	}
	raw, err := g.Store.Get(ctx, id)
	// Changed since seen: a vote stored while it still pends (a decision
	// being sealed reads pending, and is answered once sealed).
	changed := err == nil && seen >= 0 && raw.Status == Pending && raw.Seen != seen
	r, err := g.describe(ctx, g.vouch(ctx, raw), err)
	if err != nil || r.Status.Final() || d <= 0 || changed {
		// Answered here: a look a wake started meanwhile (between the add
		// and this) finds it so and does nothing, rather than reading the
		// request again for an answer nobody waits for.
		w.state.Store(true)
		g.hub.remove(w)
		return r, nil, err
	}
	w.mu.Lock() // a look may run already
	w.floor = max(seen, raw.Seen)
	w.mu.Unlock()
	return nil, w.park(d), nil
}

// park starts w's timer: it is answered by a wake, or as it stands once d
// has passed.
func (w *Waiter) park(d time.Duration) *Waiter {
	w.tmu.Lock()
	if !w.state.Load() { // not already answered by a wake
		w.timer = time.AfterFunc(d, w.expire)
	}
	w.tmu.Unlock()
	return w
}

// WaitHeldFunc is WaitHeld for a parked caller: the same as WaitFunc,
// and Gone (the requester's connection went away) withdraws the request
// unless a new long-poll on it begins within WithdrawGrace.
func (g *Gateway) WaitHeldFunc(ctx context.Context, id string, d time.Duration, seen int, done func(*Request, error)) (*Request, *Waiter, error) {
	n, err := g.Store.Hold(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	r, w, err := g.WaitFunc(ctx, id, d, seen, done)
	if w != nil {
		w.held, w.holds = true, n
	}
	return r, w, err
}

// Gone: the caller went away. The wait stops and, for a held wait not yet
// answered, the request is withdrawn after the grace period unless its
// requester polls again (as WaitHeld does when its context ends).
// It reports whether it stopped the wait (false: done is being called).
func (w *Waiter) Gone() bool {
	if !w.Stop() {
		return false
	}
	if w.held && !w.g.stopping() {
		w.g.withdrawUnless(w.id, w.holds)
	}
	return true
}

// Stop cancels the wait; false if done has been or is being called.
func (w *Waiter) Stop() bool {
	if !w.state.CompareAndSwap(false, true) {
		return false
	}
	w.release()
	return true
}

func (w *Waiter) release() {
	w.g.hub.remove(w)
	w.tmu.Lock()
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.recheck != nil {
		w.recheck.Stop()
	}
	w.tmu.Unlock()
}

func (w *Waiter) finish(r *Request, err error) {
	if !w.state.CompareAndSwap(false, true) {
		return
	}
	w.release()
	w.done(r, err)
}

// expire: d has passed; the answer is the request as it stands.
func (w *Waiter) expire() {
	if w.state.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLookTimeout)
	defer cancel()
	r, err := w.g.Get(ctx, w.id)
	w.finish(r, err)
}

// look runs when the request changed (or the subscription was
// re-established): report it, unless it is final but not yet sealed —
// the decision's receipt is on its way (its saving wakes us again), or it
// never comes and the request reads denied once the seal window has
// passed. Either way that is no change to report yet.
//
// known, when not nil, gives the request as the change left it (a
// NoticeStore's notice): it is looked at instead of read.
func (w *Waiter) look(known func() *Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state.Load() {
		return
	}
	g := w.g
	g.hub.add(w)
	ctx, cancel := context.WithTimeout(context.Background(), waitLookTimeout)
	defer cancel()
	var raw *Request
	var err error
	if known != nil {
		raw = known()
	} else {
		raw, err = g.Store.Get(ctx, w.id)
	}
	if err == nil && w.seen >= 0 && raw.Status == Pending && raw.Seen == w.seen {
		return // a late notice of a change its caller has seen: still parked
	}
	if known != nil && raw.Status == Pending && raw.Seen < w.floor {
		// A notice older than a read made before it came (the read's or
		// the caller's): news to no one. A read is never older; lists
		// only grow.
		return
	}
	sealing := err == nil && raw.Status.Final() && len(raw.Receipt) == 0 && g.notary() != nil
	r, err := g.describe(ctx, g.vouch(ctx, raw), err)
	if err != nil || !sealing {
		// Claimed under mu: a look woken meanwhile (the decision's own
		// wake and its receipt's notice come together) then reads nothing.
		if !w.state.CompareAndSwap(false, true) {
			return
		}
		w.mu.Unlock()
		w.release()
		w.done(r, err)
		w.mu.Lock()
		return
	}
	w.tmu.Lock()
	if w.recheck == nil && !w.state.Load() {
		w.recheck = time.AfterFunc(SealWindow+100*time.Millisecond, w.rechecked)
	}
	w.tmu.Unlock()
}

// rechecked: the seal window passed without a wake; look again (and
// again each window while it stays unsealed).
func (w *Waiter) rechecked() {
	w.tmu.Lock()
	w.recheck = nil
	w.tmu.Unlock()
	w.look(nil)
}

// hub maps request ids to the waiters parked on this gateway. A request
// has one waiter or a few: a slice per id is smaller than a set.
type hub struct {
	mu sync.Mutex
	m  map[string][]*Waiter
	n  int
}

func (h *hub) add(w *Waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// A finished waiter stays out: its release (after the state is set)
	// either comes after this add and undoes it, or came before and this
	// sees the state.
	if w.in || w.state.Load() {
		return
	}
	if h.m == nil {
		h.m = map[string][]*Waiter{}
	}
	h.m[w.id] = append(h.m[w.id], w)
	w.in = true
	h.n++
}

func (h *hub) remove(w *Waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !w.in {
		return
	}
	ws := h.m[w.id]
	for i, x := range ws {
		if x == w {
			ws[i] = ws[len(ws)-1]
			ws[len(ws)-1] = nil
			ws = ws[:len(ws)-1]
			break
		}
	}
	if len(ws) == 0 {
		delete(h.m, w.id)
	} else {
		h.m[w.id] = ws
	}
	w.in = false
	h.n--
}

// take removes and returns id's waiters ("" for all).
func (h *hub) take(id string) []*Waiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*Waiter
	if id == "" {
		out = make([]*Waiter, 0, h.n)
		for _, ws := range h.m {
			out = append(out, ws...)
		}
		clear(h.m)
	} else {
		out = h.m[id]
		delete(h.m, id)
	}
	for _, w := range out {
		w.in = false
	}
	h.n -= len(out)
	return out
}

// wakeKnown wakes id's waiters to look at what known gives, or (nil) to
// read the request. Woken to read, a waiter leaves the hub until its look
// has read (a notice in between is covered by that read); woken with what
// a notice showed, it stays, so the next notice wakes it again.
func (h *hub) wakeKnown(id string, known func() *Request) {
	if known == nil {
		for _, w := range h.take(id) {
			go w.look(nil)
		}
		return
	}
	h.mu.Lock()
	ws := slices.Clone(h.m[id])
	h.mu.Unlock()
	for _, w := range ws {
		go w.look(known)
	}
}

// wakeAll wakes every waiter to read, and says how many it woke.
func (h *hub) wakeAll() int {
	ws := h.take("")
	for _, w := range ws {
		go w.look(nil)
	}
	return len(ws)
}

// stopWaiters answers every parked waiter "unavailable" as the gateway
// stops (nothing would wake them): clients ask again, of a live replica.
func (g *Gateway) stopWaiters() {
	for _, w := range g.hub.take("") {
		w.finish(nil, Errorf(EUnavailable, "the gateway is shutting down; ask again"))
	}
}

// Waiting reports how many callers wait on this gateway.
func (g *Gateway) Waiting() int {
	g.hub.mu.Lock()
	defer g.hub.mu.Unlock()
	return g.hub.n
}
