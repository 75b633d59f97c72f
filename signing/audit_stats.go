package signing

import (
	"slices"
	"sync"
	"time"
)

// AuditStats says how records waited for the chain since the log opened
// (or since ResetStats): what `signoff bench` prints beside its numbers.
type AuditStats struct {
	Records int // records committed with work or alone (checkpoints aside)
	Commits int // round trips to the store that carried them
	// Wait is from a record's Append to its commit being sent: the
	// chain's lock, or the queue of a group commit.
	Wait50, Wait99 time.Duration
	// Commit is one round trip to the store (a batch, or one record).
	Commit50, Commit99 time.Duration
}

// statSamples is how many of the latest samples are kept.
const statSamples = 1 << 16

type auditStats struct {
	mu      sync.Mutex
	records int
	commits int
	wait    ring
	commit  ring
}

type ring struct {
	d    []time.Duration
	next int
}

func (r *ring) add(d time.Duration) {
	if len(r.d) < statSamples {
		r.d = append(r.d, d)
		return
	}
	r.d[r.next] = d
	r.next = (r.next + 1) % statSamples
}

func (r *ring) pct(q int) time.Duration {
	if len(r.d) == 0 {
		return 0
	}
	s := slices.Clone(r.d)
	slices.Sort(s)
	return s[(len(s)-1)*q/100]
}

func (s *auditStats) waited(ds ...time.Duration) {
	s.mu.Lock()
	for _, d := range ds {
		s.wait.add(d)
	}
	s.records += len(ds)
	s.mu.Unlock()
}

func (s *auditStats) committed(d time.Duration) {
	s.mu.Lock()
	s.commit.add(d)
	s.commits++
	s.mu.Unlock()
}

// Stats says how records waited for the chain.
func (l *AuditLog) Stats() AuditStats {
	s := &l.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	return AuditStats{
		Records: s.records, Commits: s.commits,
		Wait50: s.wait.pct(50), Wait99: s.wait.pct(99),
		Commit50: s.commit.pct(50), Commit99: s.commit.pct(99),
	}
}

// ResetStats starts Stats afresh.
func (l *AuditLog) ResetStats() {
	s := &l.stats
	s.mu.Lock()
	s.records, s.commits, s.wait, s.commit = 0, 0, ring{}, ring{}
	s.mu.Unlock()
}
