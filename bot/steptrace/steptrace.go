package steptrace

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Recorder collects the steps of the traces that ended while it was
// installed.
type Recorder struct {
	mu     sync.Mutex
	order  []string
	steps  map[string][]time.Duration
	totals []time.Duration
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{steps: map[string][]time.Duration{}} }

var installed atomic.Pointer[Recorder]

// Install makes r the process's recorder until the returned func is
// called. Calls started before it are not traced.
func Install(r *Recorder) (uninstall func()) {
	installed.Store(r)
	return func() { installed.CompareAndSwap(r, nil) }
}

type ctxKey struct{}

// trace is one call's marks so far.
type trace struct {
	r     *Recorder
	mu    sync.Mutex
	start time.Time
	last  time.Time
	names []string
	ds    []time.Duration
}

// Start begins a trace of the call ctx carries, when a Recorder is
// installed; otherwise it returns ctx as it is.
func Start(ctx context.Context) context.Context {
	r := installed.Load()
	if r == nil {
		return ctx
	}
	now := time.Now()
	return context.WithValue(ctx, ctxKey{}, &trace{r: r, start: now, last: now})
}

// Mark ends step: the time since the trace's previous mark (or its start)
// is step's.
func Mark(ctx context.Context, step string) {
	t := traced(ctx)
	if t == nil {
		return
	}
	now := time.Now()
	t.mu.Lock()
	t.names = append(t.names, step)
	t.ds = append(t.ds, now.Sub(t.last))
	t.last = now
	t.mu.Unlock()
}

// End ends the trace: rest is the step from its last mark to now. A trace
// with no marks (a call that marks nothing), or that ends once its
// Recorder is no longer installed, is not kept.
func End(ctx context.Context, rest string) {
	t := traced(ctx)
	if t == nil {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.names) == 0 {
		return
	}
	r := t.r
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, name := range t.names {
		r.add(name, t.ds[i])
	}
	r.add(rest, now.Sub(t.last))
	r.totals = append(r.totals, now.Sub(t.start))
}

// traced is ctx's trace while a Recorder is installed (nil otherwise: no
// context lookup then).
func traced(ctx context.Context) *trace {
	if installed.Load() == nil {
		return nil
	}
	t, _ := ctx.Value(ctxKey{}).(*trace)
	return t
}

func (r *Recorder) add(name string, d time.Duration) {
	if _, ok := r.steps[name]; !ok {
		r.order = append(r.order, name)
	}
	r.steps[name] = append(r.steps[name], d)
}

// Step is one step's times over the traces kept.
type Step struct {
	Name string
	N    int // times it was marked
	P50  time.Duration
	P90  time.Duration
}

// Steps returns each step, in the order first seen, and the whole traces'
// own (Name "", N the traces kept).
func (r *Recorder) Steps() (steps []Step, whole Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range r.order {
		steps = append(steps, summary(name, r.steps[name]))
	}
	return steps, summary("", r.totals)
}

func summary(name string, ds []time.Duration) Step {
	s := Step{Name: name, N: len(ds)}
	if len(ds) == 0 {
		return s
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	s.P50, s.P90 = ds[len(ds)/2], ds[len(ds)*9/10]
	return s
}
