package signing

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/steptrace"
)

// Group commit. A record that comes while another batch is on its way to
// the store waits in the queue; the next batch chains all the waiting
// records in order (seq, prev, hash, in memory), writes their lines to the
// file in one write and sends their commits in one round trip
// (bot.AuditBatcher). The caller that finds no batch running leads one;
// when it is done it hands the lead to the first record still waiting, so
// no goroutine of the log's own sits between a vote and its commit.
//
// Every commit checks the chain's head itself. The records that joined are
// a prefix of the batch; the file keeps their lines and is cut after the
// last one. The first that did not join either is finished (not part of
// the chain: a duplicate, a decision already audited; or failed) or found
// the head moved by another replica; every later one found the head moved
// and did nothing, and is chained again on the real head and sent again,
// its caller still waiting. (When the store cannot be reached at all,
// every commit of the batch fails with its own error: all are refused.)

// maxBatch bounds the records of one batch.
const maxBatch = 256

// queued is one record waiting for its batch.
type queued struct {
	r    Record
	t0   time.Time // when it was appended
	c    *bot.AuditCommit
	err  error
	lead bool          // set, with done, when it is to lead the next batch
	done chan struct{} // one send: finished, or lead
}

// Queued is the number of records waiting for a batch.
func (l *AuditLog) Queued() int {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	return len(l.queue)
}

// Batches reports whether the log group-commits: its chain is in a store
// that can run a batch of commits in one round trip.
func (l *AuditLog) Batches() bool { return l.batcher != nil }

// AppendBatched writes the record for e with c (the store's prepared
// work, or nil Op for the record alone), in a batch with the records that
// wait for the chain at the same time, and fills in c's result. An error
// means the record is not in the chain and c's work was not done (c.Err,
// when set, is the store's own error for it).
func (l *AuditLog) AppendBatched(ctx context.Context, e bot.AuditEntry, c *bot.AuditCommit) error {
	if l.batcher == nil {
		return errors.New("audit: this log's store cannot batch commits")
	}
	r, err := newRecord(e)
	if err != nil {
		return err
	}
	steptrace.Mark(ctx, "make its audit record")
	q := &queued{r: r, t0: time.Now(), c: c, done: make(chan struct{}, 1)}
	l.qmu.Lock()
	l.queue = append(l.queue, q)
	lead := !l.leading
	l.leading = true
	l.qmu.Unlock()
	if !lead {
		<-q.done
		steptrace.Mark(ctx, "wait for the audit chain (a batch before it)")
		if !q.lead {
			return q.err
		}
	}
	l.lead(context.WithoutCancel(ctx))
	return q.err
}

// lead commits one batch (the leader's own record is its first), then
// hands the lead on.
func (l *AuditLog) lead(ctx context.Context) {
	l.mu.Lock()
	l.qmu.Lock()
	n := min(len(l.queue), maxBatch)
	batch := make([]*queued, n)
	copy(batch, l.queue)
	l.queue = append(l.queue[:0], l.queue[n:]...)
	l.qmu.Unlock()

	l.commitBatch(ctx, batch)
	if l.seq-l.covered >= uint64(l.opt.CheckpointEvery) {
		l.checkpoint(ctx, "count") // tried again with the next batch or tick
	}
	l.mu.Unlock()

	l.qmu.Lock()
	var next *queued
	if len(l.queue) > 0 {
		next = l.queue[0]
	} else {
		l.leading = false
	}
	l.qmu.Unlock()
	if next != nil {
		next.lead = true
		next.done <- struct{}{}
	}
	for _, q := range batch[1:] {
		q.done <- struct{}{}
	}
}

// commitBatch chains batch after the head and commits it, as many rounds
// as it takes; l.mu is held. Each record ends with its err set (nil: its
// commit ran; see its c).
func (l *AuditLog) commitBatch(ctx context.Context, batch []*queued) {
	fail := func(qs []*queued, err error) {
		for _, q := range qs {
			q.err = err
		}
	}
	waits := make([]time.Duration, len(batch))
	for i, q := range batch {
		q.r.Time = l.now().UTC().Format(time.RFC3339Nano)
		waits[i] = time.Since(q.t0)
	}
	l.stats.waited(waits...)
	todo, moved := batch, 0
	for len(todo) > 0 {
		if l.broken != nil {
			fail(todo, fmt.Errorf("audit log unusable until restart: %w", l.broken))
			return
		}
		if l.fileSeq < l.seq {
			if err := l.catchUp(ctx); err != nil {
				fail(todo, err)
				return
			}
		}
		lines := make([][]byte, len(todo))
		commits := make([]*bot.AuditCommit, len(todo))
		seq, prev := l.seq, l.prev
		for i, q := range todo {
			q.r.Seq, q.r.Prev = seq+1, prev
			d, err := q.r.digest()
			if err != nil {
				fail(todo, fmt.Errorf("audit digest: %w", err))
				return
			}
			q.r.Hash = hex.EncodeToString(d[:])
			line, err := q.r.line()
			if err != nil {
				fail(todo, err)
				return
			}
			lines[i] = line
			q.c.Ref = bot.AuditRef{Seq: q.r.Seq, Prev: q.r.Prev, Hash: q.r.Hash, Line: line, Shared: true}
			commits[i] = q.c
			seq, prev = q.r.Seq, q.r.Hash
		}
		steptrace.Mark(ctx, "chain the batch's records (seq, hash, line)")
		base, ends, err := l.writeLines(lines)
		if err != nil {
			fail(todo, err)
			return
		}
		steptrace.Mark(ctx, "write them to the audit file")
		t0 := time.Now()
		l.batcher.CommitAuditBatch(ctx, commits)
		l.stats.committed(time.Since(t0))

		joined := 0
		for joined < len(todo) && todo[joined].c.Err == nil && todo[joined].c.InChain {
			joined++
		}
		if joined < len(todo) {
			end := base
			if joined > 0 {
				end = ends[joined-1]
			}
			if err := l.rollback(end); err != nil {
				fail(todo[joined:], err)
				todo = todo[:joined]
			}
		}
		if joined > 0 {
			last := todo[joined-1].r
			l.seq, l.prev, l.fileSeq, l.fileHash = last.Seq, last.Hash, last.Seq, last.Hash
			if l.oldest.IsZero() {
				l.oldest = time.Now()
			}
		}
		if joined >= len(todo) {
			return
		}
		// The first that did not join: another replica moved the head
		// (catch up before the next round), or it is finished.
		if errors.Is(todo[joined].c.Err, bot.ErrAuditConflict) {
			if moved++; moved == 50 {
				fail(todo[joined:], errors.New("audit store: the chain's head kept moving"))
				return
			}
			if err := l.catchUp(ctx); err != nil {
				fail(todo[joined:], err)
				return
			}
		}
		var again []*queued
		ahead := false
		for _, q := range todo[joined:] {
			switch {
			case errors.Is(q.c.Err, bot.ErrAuditConflict):
				again = append(again, q)
			case q.c.InChain:
				// Joined after one that reported no record: that one's
				// script failed after appending it (a write past the
				// chain's, such as the outbox's). The store's chain is
				// ahead of the file: copy it now.
				ahead = true
			}
			// Otherwise it is done: not in the chain (a duplicate, a
			// decision already audited, a request gone), or failed.
		}
		if ahead {
			if err := l.catchUp(ctx); err != nil {
				fail(again, err)
				return
			}
		}
		todo = again
	}
}

// writeLines appends lines to the file in one write. base is where the
// first line starts (after a newline that ends a torn tail) and ends[i]
// where line i ends; a partial write is taken back.
func (l *AuditLog) writeLines(lines [][]byte) (base int64, ends []int64, err error) {
	size := 1
	for _, line := range lines {
		size += len(line) + 1
	}
	buf := make([]byte, 0, size)
	if l.torn {
		buf = append(buf, '\n') // start on a line of its own after a tear
	}
	base = l.size + int64(len(buf))
	ends = make([]int64, len(lines))
	for i, line := range lines {
		buf = append(append(buf, line...), '\n')
		ends[i] = l.size + int64(len(buf))
	}
	n, err := l.f.Write(buf)
	if err != nil {
		if n > 0 {
			if rerr := l.rollback(l.size); rerr != nil {
				l.torn = true
			}
		}
		return 0, nil, fmt.Errorf("audit write: %w", err)
	}
	l.size += int64(n)
	l.torn = false
	return base, ends, nil
}
