package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/steptrace"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

// Config is one run.
type Config struct {
	URL   string // the gateway, loopback
	Token string // bearer token, when the gateway wants one

	Persona string
	// Voters sign each request's reactions, in order, until it is
	// decided: with the persona's owner alone, one vote decides.
	Voters []*signing.Key
	// CheckedSigning signs reactions as signoff approve does, verifying
	// each signature made (BIP-340's fault check); otherwise the same
	// bytes without that check (signing.Key.Unchecked), which is most of
	// what signing costs the machine the client shares with the gateway.
	CheckedSigning bool

	// Redis is the store the gateway uses: the floor's round trip.
	Redis goredis.UniversalClient
	// Audit, when set, is the gateway's store: its audit stream is read
	// after the run to check every request was decided exactly once.
	Audit *qredis.Store

	Concurrency int
	Duration    time.Duration // the loaded phase lasts this long…
	N           int           // …or this many lifecycles, when > 0
	// Unloaded is how many lifecycles are run one at a time, each beside
	// one sample of each floor piece (default 200).
	Unloaded int

	Out      io.Writer // the report
	Progress io.Writer // a line a second while running (nil: none)
	// Notes are printed at the top of the report (how the gateway runs).
	Notes []string
	// CPUProfile, when set, receives a CPU profile of the loaded phase.
	CPUProfile io.Writer
	// GatewayHere: the gateway runs in this process (bench --spawn), so
	// the process's CPU time less the client's is the gateway's.
	GatewayHere bool
	// Loaded, when set, is called as the loaded phase starts, and Gateway
	// after it: lines on the gateway's side of that phase, for the report
	// (bench --spawn: how its audit records waited for the chain).
	Loaded  func()
	Gateway func() []string
}

// Run measures the floor, the unloaded vote path and the loaded phase,
// prints the report and returns it. A lifecycle that failed is counted
// and the first few are printed; Run's error says whether any did.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	// Everything the client starts carries its label, so that the loaded
	// phase's profile tells its CPU from the gateway's.
	pprof.Do(ctx, pprof.Labels(clientLabel, "client"), func(ctx context.Context) {
		rep, err = run1(ctx, cfg)
	})
	return rep, err
}

func run1(ctx context.Context, cfg Config) (_ *Report, err error) {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.Unloaded <= 0 {
		cfg.Unloaded = 200
	}
	if cfg.N <= 0 && cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	if len(cfg.Voters) == 0 {
		return nil, errors.New("bench: no voter keys")
	}
	if cfg.Redis == nil {
		return nil, errors.New("bench: no Redis client for the floor")
	}
	if !cfg.CheckedSigning {
		voters := make([]*signing.Key, len(cfg.Voters))
		for i, k := range cfg.Voters {
			voters[i] = k.Unchecked()
		}
		cfg.Voters = voters
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	b := newRun(cfg)
	rep := &Report{Config: cfg, Machine: machine()}

	fl, err := newFloor(ctx, cfg.Redis, cfg.Voters)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := fl.close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = cerr
		}
	}()

	// Warm the connections and the gateway's caches.
	for range 5 {
		if _, err := b.lifecycle(ctx); err != nil {
			return nil, fmt.Errorf("bench: the first lifecycle failed, so nothing was measured: %w", err)
		}
	}

	// With the gateway in this process, where an unloaded vote's time
	// goes, step by step (steptrace): nothing is marked under load.
	if cfg.GatewayHere {
		steps := steptrace.NewRecorder()
		uninstall := steptrace.Install(steps)
		err = b.unloaded(ctx, fl, rep)
		uninstall()
		rep.Steps, rep.Handler = steps.Steps()
	} else {
		err = b.unloaded(ctx, fl, rep)
	}
	if err != nil {
		return rep, err
	}
	if cfg.Loaded != nil {
		cfg.Loaded()
	}
	if err := b.loaded(ctx, rep); err != nil {
		return rep, err
	}
	if cfg.Gateway != nil {
		rep.Gateway = cfg.Gateway()
	}
	if err := b.votes(ctx, rep); err != nil {
		return rep, err
	}
	if err := b.minimumLoaded(ctx, fl, rep); err != nil {
		return rep, err
	}
	if cfg.Audit != nil {
		rep.Audit = b.checkAudit(ctx, cfg.Audit)
	}
	rep.Errors, rep.FirstErrors, rep.RateLimited = b.errs.Load(), b.firstErrs, b.retries.Load()
	rep.Print(cfg.Out)
	if rep.Errors > 0 {
		return rep, fmt.Errorf("bench: %d lifecycles failed", rep.Errors)
	}
	if rep.Audit != nil && !rep.Audit.ok() {
		return rep, errors.New("bench: not every request was decided exactly once in the audit")
	}
	return rep, nil
}

// newRun is a run of cfg with its clients.
func newRun(cfg Config) *run {
	cfg.Progress = &lockedWriter{w: cfg.Progress} // the clients' 429 notices come from every goroutine
	b := &run{cfg: cfg, tag: bot.NewID()[:6]}
	// The waiter and the voter are different clients, as they are in
	// life (the agent waits, a person answers), each with its own
	// connections.
	b.hc = &http.Client{Transport: transport(2*cfg.Concurrency + 4)}
	// A gateway that rate-limits the bench makes its calls wait (the
	// client tries a 429 again after Retry-After): each wait is counted in
	// the report and told on the progress line, as it skews the numbers.
	onRetry := func(wait time.Duration, msg string) {
		b.retries.Add(1)
		fmt.Fprintf(b.cfg.Progress, "bench: the gateway is rate limiting the bench (%s); waiting %s — the numbers include it\n", msg, wait)
	}
	b.c = &httpapi.Client{BaseURL: cfg.URL, HTTP: b.hc, Token: cfg.Token, OnRetry: onRetry}
	b.wc = &httpapi.Client{BaseURL: cfg.URL, HTTP: &http.Client{Transport: transport(2*cfg.Concurrency + 4)}, Token: cfg.Token, OnRetry: onRetry}
	return b
}

func transport(conns int) *http.Transport {
	return &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
}

type run struct {
	cfg Config
	tag string
	hc  *http.Client
	c   *httpapi.Client // creates and votes
	wc  *httpapi.Client // waits

	made      atomic.Int64 // requests made, numbering their actions
	mu        sync.Mutex
	ids       []string // every request measured (warm-up excluded)
	errs      atomic.Int64
	retries   atomic.Int64 // calls the gateway refused 429 and the client waited out
	firstErrs []string
}

// sample is one lifecycle as the client saw it.
type sample struct {
	id     string
	create time.Duration   // POST /v1/requests → answer
	votes  []time.Duration // each reaction POST → its answer
	waiter time.Duration   // the deciding reaction sent → the waiter sees the decision
}

// lifecycle creates a request, waits on it, and answers it with signed
// reactions until it is decided; the waiter must see it approved with a
// receipt.
func (b *run) lifecycle(ctx context.Context) (sample, error) {
	var s sample
	t0 := time.Now()
	r, err := b.create(ctx)
	s.create = time.Since(t0)
	if err != nil {
		return s, err
	}
	s.id = r.ID
	return s, b.answer(ctx, r, nil, &s)
}

// create makes a request, which must be pending.
func (b *run) create(ctx context.Context) (*bot.Request, error) {
	r, err := b.c.Submit(ctx, bot.NewRequest{
		Persona: b.cfg.Persona, Kind: bot.KindCommand,
		Action: fmt.Sprintf("deploy --bench %s-%d", b.tag, b.made.Add(1)), Reason: "signoff bench", Nonce: bot.NewNonce(),
	})
	if err != nil {
		return nil, fmt.Errorf("create request: %w", err)
	}
	if r.Status != bot.Pending {
		return r, fmt.Errorf("request %s is %s at creation (%s), want pending", r.ID, r.Status, r.DecisionReason)
	}
	return r, nil
}

// reaction is k's approval of r, signed now.
func reaction(k *signing.Key, r *bot.Request) ([]byte, error) {
	return signing.NewReactionWithReason(k, r.EventID, r.GatewayKey, bot.Approve, "", time.Now())
}

// answer waits on r and posts its reactions until it is decided: signed
// ones when given (the votes phase's, signed before it), else each signed
// as it goes. The waiter must see r approved with a receipt.
func (b *run) answer(ctx context.Context, r *bot.Request, signed [][]byte, s *sample) error {
	type waited struct {
		r   *bot.Request
		at  time.Time
		err error
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done := make(chan waited, 1)
	onWire := make(chan struct{})
	var once sync.Once
	go func() {
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(onWire) }) }}
		tctx := httptrace.WithClientTrace(wctx, trace)
		for {
			got, err := b.wc.Wait(tctx, r.ID, 30*time.Second)
			if err != nil || got.Status.Final() || wctx.Err() != nil {
				done <- waited{got, time.Now(), err}
				return
			}
		}
	}()
	// The vote goes out once the waiter's request is on the wire.
	select {
	case <-onWire:
	case w := <-done:
		return fmt.Errorf("wait on %s: %v", r.ID, w.err)
	}

	var sent time.Time
	decided := false
	for i, k := range b.cfg.Voters {
		var raw []byte
		if signed != nil {
			raw = signed[i]
		} else {
			var err error
			if raw, err = reaction(k, r); err != nil {
				return err
			}
		}
		sent = time.Now()
		out, err := b.c.PostEvent(ctx, raw)
		s.votes = append(s.votes, time.Since(sent))
		if err != nil {
			return fmt.Errorf("vote on %s: %w", r.ID, err)
		}
		if out.Result != bot.Counted {
			return fmt.Errorf("vote on %s: %s (%s), want counted", r.ID, out.Result, out.Reason)
		}
		if out.Status.Final() {
			if out.Status != bot.Approved {
				return fmt.Errorf("request %s decided %s, want approved", r.ID, out.Status)
			}
			decided = true
			break
		}
	}
	if !decided {
		return fmt.Errorf("request %s still pending after %d votes: the persona needs more voters than bench holds keys for", r.ID, len(b.cfg.Voters))
	}
	w := <-done
	if w.err != nil {
		return fmt.Errorf("wait on %s: %w", r.ID, w.err)
	}
	if w.r.Status != bot.Approved || len(w.r.Receipt) == 0 {
		return fmt.Errorf("waiter on %s saw %s (receipt: %d bytes), want approved with a receipt", r.ID, w.r.Status, len(w.r.Receipt))
	}
	s.waiter = w.at.Sub(sent)
	return nil
}

func (b *run) failed(err error) {
	if b.errs.Add(1) <= 5 {
		b.mu.Lock()
		b.firstErrs = append(b.firstErrs, err.Error())
		b.mu.Unlock()
	}
}

func (b *run) keep(id string) {
	if id == "" {
		return
	}
	b.mu.Lock()
	b.ids = append(b.ids, id)
	b.mu.Unlock()
}

// unloaded runs lifecycles one at a time, each beside one sample of each
// floor piece, so the floor and the vote are measured under the same
// moment's noise.
func (b *run) unloaded(ctx context.Context, fl *floor, rep *Report) error {
	p := &rep.Unloaded
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := range b.cfg.Unloaded {
		select {
		case <-tick.C:
			fmt.Fprintf(b.cfg.Progress, "bench: unloaded %2.0fs: %d/%d lifecycles, vote p50 %s\n",
				time.Since(start).Seconds(), i, b.cfg.Unloaded, pct(p.Vote, 50))
		default:
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		for range 3 {
			if err := fl.sample(ctx, &rep.Floor); err != nil {
				return err
			}
		}
		s, err := b.lifecycle(ctx)
		b.keep(s.id)
		if err != nil {
			b.failed(err)
			continue
		}
		p.add(s)
	}
	p.Elapsed = time.Since(start)
	return nil
}

// loaded runs Concurrency clients, each lifecycle after lifecycle, for
// Duration or until N lifecycles have started.
func (b *run) loaded(ctx context.Context, rep *Report) error {
	// A lifecycle once started runs to its end: the run stops starting
	// new ones, so every request made is decided.
	more := b.admit(ctx, int64(b.cfg.N))
	var finished atomic.Int64
	var err error
	rep.CPU, err = b.timed(ctx, &rep.Loaded, b.cfg.CPUProfile, finished.Load, func(secs float64, n, delta int64) string {
		return fmt.Sprintf("bench: loaded %2.0fs: %d lifecycles (%d/s this second), %d errors", secs, n, delta, b.errs.Load())
	}, func() (sample, bool, error) {
		if _, ok := more(); !ok {
			return sample{}, false, nil
		}
		s, err := b.lifecycle(ctx)
		b.keep(s.id)
		if err == nil {
			finished.Add(1)
		}
		return s, true, err
	})
	return err
}

// timed runs one timed phase into p: its clients doing one (as clients
// runs them) under a CPU meter (profile: the caller's --cpuprofile, or
// nil), with a progress line a second of what count counts, worded by
// line. It returns the phase's CPU.
func (b *run) timed(ctx context.Context, p *Phase, profile io.Writer, count func() int64, line func(secs float64, n, delta int64) string, one func() (sample, bool, error)) (CPU, error) {
	meter, err := startCPU(ctx, b.cfg.Redis, profile)
	if err != nil {
		return CPU{}, err
	}
	start := time.Now()
	stopProgress := b.everySecond(count, line)
	b.clients(p, one)
	p.Elapsed = time.Since(start)
	c := meter.stop(ctx, b.cfg.GatewayHere)
	stopProgress()
	return c, nil
}

// clients runs Concurrency clients, each doing one until it says there
// is no more, into p: a failure is counted and the client goes on.
func (b *run) clients(p *Phase, one func() (s sample, more bool, err error)) {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for range b.cfg.Concurrency {
		wg.Go(func() {
			var mine Phase
			for {
				s, more, err := one()
				if !more {
					break
				}
				if err != nil {
					b.failed(err)
					continue
				}
				mine.add(s)
			}
			mu.Lock()
			p.merge(&mine)
			mu.Unlock()
		})
	}
	wg.Wait()
}

// admit returns a phase's gate: each call numbers one more unit of work
// (1, 2, …) and says whether it may start — n in all when n > 0, and
// until Duration has passed from now unless N is set; none once ctx ends.
func (b *run) admit(ctx context.Context, n int64) func() (int64, bool) {
	deadline := time.Now().Add(b.cfg.Duration)
	var started atomic.Int64
	return func() (int64, bool) {
		i := started.Add(1)
		if ctx.Err() != nil {
			return i, false
		}
		if n > 0 && i > n {
			return i, false
		}
		return i, b.cfg.N > 0 || time.Now().Before(deadline)
	}
}

// everySecond prints line on the progress writer once a second (with the
// seconds since it started, count now, and count's rise since the last
// line) until the returned stop is called.
func (b *run) everySecond(count func() int64, line func(secs float64, n, delta int64) string) (stop func()) {
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last := int64(0)
		for {
			select {
			case <-done:
				return
			case <-t.C:
				n := count()
				fmt.Fprintln(b.cfg.Progress, line(time.Since(start).Seconds(), n, n-last))
				last = n
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// AuditCheck is what the gateway's audit stream says of the requests run.
type AuditCheck struct {
	Requests  int // requests bench made (warm-up excluded)
	Decisions int // decision records for them
	Missing   int // requests with no decision record
	Twice     int // requests with more than one
	Votes     int // vote records for them
	Err       string
}

func (a *AuditCheck) ok() bool { return a.Err == "" && a.Missing == 0 && a.Twice == 0 }

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
