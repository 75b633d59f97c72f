package bot

import (
	"context"
	"sync"
	"time"
)

// A vote this gateway is tallying, and a decision it is sealing, are
// known here, so the echoes of its own step do not race it: the store's
// change notice (published by the step that decides) would wake the
// request's waiters to read a decision not yet sealed, and the outbox
// entry the same step enqueues would have this gateway's consumer audit
// and seal it a second time, at the same moment, while the voter is still
// waiting for its answer. Both wait for the local work instead; neither
// is needed for safety (the outbox and the seal window cover a replica
// that dies), only for speed.

// inFlight counts the local votes and seals of each request.
type inFlight struct {
	mu sync.Mutex
	m  map[string]*flight
}

type flight struct {
	// n counts votes being tallied, seals being made, and votes tallied
	// whose waiters' progress is still held (ProgressHold); busy counts
	// the first two alone, which the outbox's delivery waits for.
	n, busy int
	woken   bool            // a change notice came meanwhile
	heldAt  time.Time       // when the first of them was held
	known   func() *Request // what the last one showed (nil: read)
	idle    chan struct{}   // closed when busy drops to 0 (made anew when it rises)
}

// begin marks a local vote or seal of id as started.
func (f *inFlight) begin(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]*flight{}
	}
	fl := f.m[id]
	if fl == nil {
		fl = &flight{}
		f.m[id] = fl
	}
	if fl.busy == 0 {
		fl.idle = make(chan struct{})
	}
	fl.n++
	fl.busy++
}

// settle marks a local vote of id tallied: it holds its waiters' progress
// until end, but is no longer work the outbox waits for.
func (f *inFlight) settle(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl := f.m[id]; fl != nil && fl.busy > 0 {
		f.idleLocked(fl)
	}
}

func (f *inFlight) idleLocked(fl *flight) {
	if fl.busy--; fl.busy == 0 {
		close(fl.idle)
	}
}

// end marks one of them finished (settled: a vote settle was called
// for); it reports whether a change notice was held back while none was
// left (the caller wakes the waiters, with what the last one showed).
func (f *inFlight) end(id string, settled bool) (woken bool, known func() *Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.m[id]
	if fl == nil {
		return false, nil
	}
	if !settled && fl.busy > 0 {
		f.idleLocked(fl)
	}
	if fl.n--; fl.n > 0 {
		return false, nil
	}
	delete(f.m, id)
	return fl.woken, fl.known
}

// hold reports whether id has local work in flight, and if so notes a
// change notice for it, to be acted on when that work ends. The last
// notice held is the one that counts: what it showed (known) is the
// request after every change noticed before it. Votes that keep coming
// within each other's hold would keep it in flight for as long as they
// come: a notice is held at most bound (0: no bound) after the first one
// held, and the next one after that is not held (the caller wakes the
// waiters with it, and what the earlier ones showed is in it).
func (f *inFlight) hold(id string, known func() *Request, now time.Time, bound time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.m[id]
	if fl == nil {
		return false
	}
	if fl.woken && bound > 0 && now.Sub(fl.heldAt) >= bound {
		fl.woken, fl.known, fl.heldAt = false, nil, time.Time{}
		return false
	}
	if !fl.woken {
		fl.heldAt = now
	}
	fl.woken, fl.known = true, known
	return true
}

// wait blocks until id has no local vote being tallied or seal being
// made, at most d.
func (f *inFlight) wait(id string, d time.Duration) {
	f.mu.Lock()
	var idle chan struct{}
	if fl := f.m[id]; fl != nil && fl.busy > 0 {
		idle = fl.idle
	}
	f.mu.Unlock()
	if idle == nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}

// localWaitMax bounds how long the outbox consumer waits for this
// gateway's own seal of a decision before delivering it anyway.
const localWaitMax = 10 * time.Second

// wakeLater is the change notice's handler (known: see NoticeStore): a request with local work in
// flight is woken when that work ends.
func (g *Gateway) wakeLater(id string, known func() *Request) {
	if g.local.hold(id, known, g.now(), g.progressHoldMax()) {
		return
	}
	g.hub.wakeKnown(id, known)
}

// endLocal ends one local vote or seal of id (settled: see
// inFlight.end), waking its waiters when a change notice was held back
// for it.
func (g *Gateway) endLocal(id string, settled bool) {
	if woken, known := g.local.end(id, settled); woken {
		g.hub.wakeKnown(id, known)
	}
}

// afterKey carries an AfterResponse in a context.
type afterKey struct{}

// AfterResponse collects work a caller wants run once its own answer is
// sent: the HTTP API puts one in a vote's context, so that the decision's
// seal and side effects do not compete with the voter's response.
type AfterResponse struct {
	mu  sync.Mutex
	fns []func()
	ran bool
}

// WithAfterResponse returns ctx carrying a new AfterResponse. Its Run
// must be called (deferred) by whoever made it.
func WithAfterResponse(ctx context.Context) (context.Context, *AfterResponse) {
	a := &AfterResponse{}
	return context.WithValue(ctx, afterKey{}, a), a
}

// Run runs the collected work (the gateway's hands each piece to its
// background, so Close waits for it); once run, later work runs at once.
func (a *AfterResponse) Run() {
	a.mu.Lock()
	fns := a.fns
	a.fns, a.ran = nil, true
	a.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// after runs fn through the context's AfterResponse, or now.
func after(ctx context.Context, fn func()) {
	if a, ok := ctx.Value(afterKey{}).(*AfterResponse); ok {
		a.mu.Lock()
		if !a.ran {
			a.fns = append(a.fns, fn)
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
	}
	fn()
}
