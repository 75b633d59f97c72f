package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/signoff/signoff/bot"
)

// The votes phase times votes alone. Its requests are made, and their
// votes signed, before it starts, as a vote's signature is made on its
// voter's device and not on the gateway's machine: what shares the cores
// with the gateway in the window is then only the client's HTTP. In the
// window each request is answered as in a lifecycle — its waiter's
// long-poll on the wire first, then its votes one after another until it
// is decided, sealed and its waiter answered with the receipt — so the
// window holds every vote's verify, tally, audit record, notices and
// decision, the seal and the outbox, and not the creates.

// prepared is a request made for the votes phase, with its votes signed.
type prepared struct {
	r     *bot.Request
	votes [][]byte
}

// votesPoolCap bounds the requests made for the votes phase when it runs
// for Duration (its requests must be answered within the persona's
// timeout, and their votes within the reactions' age).
const votesPoolCap = 20000

// votesPool is how many requests the votes phase makes: N with -n; else
// twice what the loaded phase's lifecycles/s would answer in Duration
// (votes alone go faster than lifecycles: 1.2–1.4× at ten votes a
// request, more at one), plus one a client.
func (b *run) votesPool(rep *Report) int {
	if b.cfg.N > 0 {
		return b.cfg.N
	}
	n := int(2*rep.Loaded.PerSecond(rep.Loaded.Lifecycles)*b.cfg.Duration.Seconds()) + b.cfg.Concurrency
	return min(n, votesPoolCap)
}

// votes runs the votes phase: prepare, then Concurrency clients answering
// the prepared requests until Duration passes or they run out (or N are
// answered); requests left over are answered after the window, untimed,
// so that every request made is decided.
func (b *run) votes(ctx context.Context, rep *Report) error {
	pool, err := b.prepare(ctx, b.votesPool(rep))
	if err != nil {
		return err
	}
	rep.VotesPool = len(pool)
	if len(pool) == 0 {
		return nil // every create failed, each counted
	}
	taken := make([]atomic.Bool, len(pool))
	more := b.admit(ctx, int64(len(pool)))
	var votes atomic.Int64
	rep.VotesCPU, err = b.timed(ctx, &rep.Votes, nil, votes.Load, func(secs float64, n, delta int64) string {
		return fmt.Sprintf("bench: votes phase %2.0fs: %d votes (%d/s this second), %d errors", secs, n, delta, b.errs.Load())
	}, func() (sample, bool, error) {
		i, ok := more()
		if !ok {
			return sample{}, false, nil
		}
		taken[i-1].Store(true)
		s, err := b.answerPrepared(ctx, &pool[i-1])
		votes.Add(int64(len(s.votes)))
		return s, true, err
	})
	if err != nil {
		return err
	}

	var left []prepared
	for i := range pool {
		if !taken[i].Load() {
			left = append(left, pool[i])
		}
	}
	if len(left) == 0 {
		return nil
	}
	rep.VotesLeft = len(left)
	fmt.Fprintf(b.cfg.Progress, "bench: votes phase: answering the %d requests the window did not reach, untimed, so that each is decided\n", len(left))
	var n atomic.Int64
	b.clients(&Phase{}, func() (sample, bool, error) {
		i := n.Add(1)
		if i > int64(len(left)) || ctx.Err() != nil {
			return sample{}, false, nil
		}
		s, err := b.answerPrepared(ctx, &left[i-1])
		return s, true, err
	})
	return ctx.Err()
}

// answerPrepared answers a prepared request with its signed votes.
func (b *run) answerPrepared(ctx context.Context, pr *prepared) (sample, error) {
	s := sample{id: pr.r.ID}
	err := b.answer(ctx, pr.r, pr.votes, &s)
	return s, err
}

// prepare makes n requests for the votes phase and signs their votes,
// Concurrency at a time, saying how far it got each second. A request
// that could not be made is counted as a failure, as a lifecycle's is,
// and left out.
func (b *run) prepare(ctx context.Context, n int) ([]prepared, error) {
	pool := make([]prepared, n)
	var next, made atomic.Int64
	stopProgress := b.everySecond(made.Load, func(secs float64, m, _ int64) string {
		return fmt.Sprintf("bench: votes phase: making its requests and signing their votes %2.0fs: %d/%d", secs, m, n)
	})
	defer stopProgress()
	var wg sync.WaitGroup
	for range b.cfg.Concurrency {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n) && ctx.Err() == nil; i = next.Add(1) {
				pr, err := b.prepareOne(ctx)
				if err != nil {
					b.failed(fmt.Errorf("votes phase: %w", err))
					continue
				}
				pool[i-1] = pr
				made.Add(1)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(pool, func(pr prepared) bool { return pr.r == nil }), nil
}

// prepareOne makes a request and signs its votes.
func (b *run) prepareOne(ctx context.Context) (prepared, error) {
	r, err := b.create(ctx)
	if r != nil {
		b.keep(r.ID)
	}
	if err != nil {
		return prepared{}, err
	}
	pr := prepared{r: r, votes: make([][]byte, len(b.cfg.Voters))}
	for j, k := range b.cfg.Voters {
		if pr.votes[j], err = reaction(k, r); err != nil {
			return prepared{}, err
		}
	}
	return pr, nil
}
