package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// MinimumLoad is the design's minimum vote (minimum.go) run under the
// loaded phase's load: the same number of clients, each posting its votes
// one after another on scratch requests of its own, a new request every
// len(Voters) votes, all on one chain (batched as the gateway's).
type MinimumLoad struct {
	Votes   int
	Elapsed time.Duration
	// Process and Redis are the phase's CPU time (0 when unknown).
	Process, Redis time.Duration
}

// PerSecond is the votes over the phase's time.
func (m *MinimumLoad) PerSecond() float64 {
	if m.Elapsed <= 0 {
		return 0
	}
	return float64(m.Votes) / m.Elapsed.Seconds()
}

// minimumLoaded runs the minimum under load for Duration, or N lifecycles'
// worth of votes.
func (b *run) minimumLoaded(ctx context.Context, fl *floor, rep *Report) error {
	fl.min.grow(1 + b.cfg.Concurrency) // client 0 is the unloaded phase's

	more := b.admit(ctx, int64(b.cfg.N*len(b.cfg.Voters)))
	var done atomic.Int64
	proc0, _ := processCPU()
	redis0, _ := redisCPU(ctx, b.cfg.Redis)
	start := time.Now()
	stopProgress := b.everySecond(done.Load, func(secs float64, n, delta int64) string {
		return fmt.Sprintf("bench: the design's minimum vote under load %2.0fs: %d votes (%d/s this second)", secs, n, delta)
	})
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for i := 1; i <= b.cfg.Concurrency; i++ {
		path := minimumPath + "/" + strconv.Itoa(i)
		wg.Go(func() {
			for _, ok := more(); ok; _, ok = more() {
				raw, err := fl.min.reaction(ctx, i)
				if err == nil {
					_, err = fl.post(ctx, b.hc, path, raw)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	ml := &MinimumLoad{Votes: int(done.Load()), Elapsed: time.Since(start)}
	stopProgress()
	if p, ok := processCPU(); ok && proc0 > 0 {
		ml.Process = p - proc0
	}
	if r, err := redisCPU(ctx, b.cfg.Redis); err == nil && redis0 > 0 {
		ml.Redis = r - redis0
	}
	rep.MinimumLoad = ml
	if firstErr != nil {
		return fmt.Errorf("bench: the design's minimum vote under load: %w", firstErr)
	}
	return nil
}
