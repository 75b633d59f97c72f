package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/steptrace"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

// Phase is the samples of one phase.
type Phase struct {
	Lifecycles int
	Votes      int
	Create     []time.Duration
	Vote       []time.Duration
	Waiter     []time.Duration
	Elapsed    time.Duration
}

func (p *Phase) add(s sample) {
	p.Lifecycles++
	p.Votes += len(s.votes)
	p.Create = append(p.Create, s.create)
	p.Vote = append(p.Vote, s.votes...)
	p.Waiter = append(p.Waiter, s.waiter)
}

func (p *Phase) merge(q *Phase) {
	p.Lifecycles += q.Lifecycles
	p.Votes += q.Votes
	p.Create = append(p.Create, q.Create...)
	p.Vote = append(p.Vote, q.Vote...)
	p.Waiter = append(p.Waiter, q.Waiter...)
}

// PerSecond is n over the phase's time.
func (p *Phase) PerSecond(n int) float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(n) / p.Elapsed.Seconds()
}

// Report is one run's numbers.
type Report struct {
	Config   Config
	Machine  string
	Floor    FloorStats
	Unloaded Phase
	// Steps are where the unloaded votes' time went in the gateway, and
	// Handler the whole of each vote's call there (bench --spawn only).
	Steps   []steptrace.Step
	Handler steptrace.Step
	Loaded  Phase
	CPU     CPU // of the loaded phase
	// Votes is the votes phase (votes.go): its Lifecycles are the
	// requests answered in its window, made before it; VotesLeft those it
	// did not reach, answered after; VotesCPU its CPU.
	Votes     Phase
	VotesLeft int
	VotesPool int
	VotesCPU  CPU
	// MinimumLoad is the design's minimum vote under the same load.
	MinimumLoad *MinimumLoad
	Audit       *AuditCheck
	Gateway     []string // the gateway's own account of the loaded phase
	Errors      int64
	FirstErrors []string
	// RateLimited is how many calls the gateway answered 429 and the
	// client waited out (their waits are in the numbers).
	RateLimited int64
}

// Ratio is the unloaded vote path's median over the floor.
func (r *Report) Ratio() float64 { return r.over(r.Unloaded.Vote) }

// pct is the q-th percentile of ds (0 when empty).
func pct(ds []time.Duration, q int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := len(s) * q / 100
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

// Dur prints d as the report does: µs below a millisecond, ms with two
// decimals below a second.
func Dur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return d.Round(time.Millisecond).String()
}

// Print writes the report.
func (r *Report) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "signoff bench: gateway %s, persona %s, %d voter key(s)\n", c.URL, c.Persona, len(c.Voters))
	for _, n := range c.Notes {
		fmt.Fprintf(w, "  %s\n", n)
	}
	fmt.Fprintf(w, "machine: %s\n", r.Machine)
	f := &r.Floor
	fmt.Fprintf(w, "floor (p50 of %d samples each, taken between the unloaded lifecycles):\n", len(f.HTTP))
	fmt.Fprintf(w, "  loopback HTTP round trip      %8s   p99 %s (trivial handler, same body)\n", Dur(pct(f.HTTP, 50)), Dur(pct(f.HTTP, 99)))
	fmt.Fprintf(w, "  verify one reaction           %8s   p99 %s (signing.ParseReaction, the gateway's verify: id hash + BIP-340 by %s)\n", Dur(pct(f.Verify, 50)), Dur(pct(f.Verify, 99)), signing.SchnorrLibrary())
	fmt.Fprintf(w, "  Redis round trip (PING)       %8s   p99 %s\n", Dur(pct(f.Redis, 50)), Dur(pct(f.Redis, 99)))
	fmt.Fprintf(w, "  floor                         %8s\n", Dur(f.P50()))
	if len(f.Minimum) > 0 {
		fmt.Fprintf(w, "beside it, a vote's least work, each a POST as the client sees it (p50 of %d each):\n", len(f.Minimum))
		fmt.Fprintf(w, "  the floor's pieces in series  %8s   p99 %s = %.2f× the floor (one handler: read, verify, PING, answer)\n", Dur(pct(f.Series, 50)), Dur(pct(f.Series, 99)), r.over(f.Series))
		fmt.Fprintf(w, "  the design's minimum vote     %8s   p99 %s = %.2f× the floor (read, verify, the audited vote script on a scratch request, answer: no more)\n", Dur(pct(f.Minimum, 50)), Dur(pct(f.Minimum, 99)), r.over(f.Minimum))
	}
	u := &r.Unloaded
	fmt.Fprintf(w, "unloaded (%d lifecycles, one at a time):\n", u.Lifecycles)
	r.phase(w, u)
	r.printSteps(w)
	l := &r.Loaded
	how := fmt.Sprintf("%s", c.Duration)
	if c.N > 0 {
		how = fmt.Sprintf("-n %d", c.N)
	}
	fmt.Fprintf(w, "loaded (concurrency %d, %s, took %s):\n", c.Concurrency, how, Dur(l.Elapsed))
	fmt.Fprintf(w, "  lifecycles/s                  %8.0f   (%d lifecycles: create, wait, vote, waiter answered)\n", l.PerSecond(l.Lifecycles), l.Lifecycles)
	fmt.Fprintf(w, "  votes/s (verified, counted)   %8.0f   (%d votes)\n", l.PerSecond(l.Votes), l.Votes)
	r.phase(w, l)
	r.CPU.print(w, l, runtime.NumCPU(), "all the phase's work — creates, waits, seals — over its votes")
	for _, g := range r.Gateway {
		fmt.Fprintf(w, "  %s\n", g)
	}
	if sign := pct(f.Sign, 50); sign > 0 && l.Elapsed > 0 {
		// What the client spends signing, from its unloaded cost: on a
		// machine the gateway shares with it, these cores are not the
		// gateway's.
		cores := float64(sign) * float64(l.Votes) / float64(l.Elapsed)
		how := signing.SchnorrLibrary() + ", without checking each signature"
		if c.CheckedSigning {
			how = signing.SchnorrLibrary() + ", each signature checked"
		}
		fmt.Fprintf(w, "  bench client signing reactions      %s each (unloaded p50, %s): ≈ %.2f of %d cores in the loaded phase\n",
			Dur(sign), how, cores, runtime.NumCPU())
	}
	if v := &r.Votes; v.Elapsed > 0 {
		ranOut := ""
		if c.N == 0 && r.VotesLeft == 0 && v.Elapsed < c.Duration {
			ranOut = " — they ran out before the duration"
		}
		fmt.Fprintf(w, "votes phase (concurrency %d, %s, took %s; its %d requests made and their votes signed before it, as a voter signs on a device of their own; %d the window did not reach, answered after it%s):\n",
			c.Concurrency, how, Dur(v.Elapsed), r.VotesPool, r.VotesLeft, ranOut)
		fmt.Fprintf(w, "  votes/s (verified, counted)   %8.0f   (%d votes on %d requests, each decided, sealed and its waiter answered in the window)\n", v.PerSecond(v.Votes), v.Votes, v.Lifecycles)
		fmt.Fprintf(w, "  vote path (reaction POST → answer)  p50 %8s  p99 %8s\n", Dur(pct(v.Vote, 50)), Dur(pct(v.Vote, 99)))
		fmt.Fprintf(w, "  reaction → waiter                   p50 %8s  p99 %8s\n", Dur(pct(v.Waiter, 50)), Dur(pct(v.Waiter, 99)))
		r.VotesCPU.print(w, v, runtime.NumCPU(), "the window's work — waits, votes, seals — over its votes")
	}
	if m := r.MinimumLoad; m != nil {
		fmt.Fprintf(w, "the design's minimum vote under the same load (%d clients, each on scratch requests of its own, all on one chain, its round trips batched as the gateway's; took %s):\n", c.Concurrency, Dur(m.Elapsed))
		every := fmt.Sprintf("a request made every %d votes", len(c.Voters))
		if len(c.Voters) == 1 {
			every = "a request made for each"
		}
		fmt.Fprintf(w, "  votes/s (verified, counted)   %8.0f   (%d votes; %s; no waiter, seal, receipt, outbox or audit file)\n", m.PerSecond(), m.Votes, every)
		if m.Process > 0 && m.Elapsed > 0 {
			fmt.Fprintf(w, "  cpu, this process             %8.2f cores (the bench client and the minimum's handlers)\n", m.Process.Seconds()/m.Elapsed.Seconds())
		}
		if m.Redis > 0 && m.Elapsed > 0 {
			fmt.Fprintf(w, "  cpu, redis-server             %8.2f cores\n", m.Redis.Seconds()/m.Elapsed.Seconds())
		}
	}
	if a := r.Audit; a != nil {
		switch {
		case a.Err != "":
			fmt.Fprintf(w, "decided exactly once: cannot tell (%s)\n", a.Err)
		case a.ok():
			fmt.Fprintf(w, "decided exactly once: yes — %d requests, %d decision records in the audit stream, 0 missing, 0 twice (%d vote records)\n", a.Requests, a.Decisions, a.Votes)
		default:
			fmt.Fprintf(w, "decided exactly once: NO — %d requests, %d decision records, %d missing, %d twice\n", a.Requests, a.Decisions, a.Missing, a.Twice)
		}
	}
	fmt.Fprintf(w, "errors: %d\n", r.Errors)
	if r.RateLimited > 0 {
		fmt.Fprintf(w, "rate limited: %d calls answered 429 and waited out — the timings include those waits; run against a gateway without SIGNOFF_RATE_LIMIT\n", r.RateLimited)
	}
	for _, e := range r.FirstErrors {
		fmt.Fprintf(w, "  %s\n", e)
	}
	fmt.Fprintf(w, "ratio vote-p50/floor: %.2f (unloaded vote p50 %s over floor %s; target ≤ 1.3", r.Ratio(), Dur(pct(u.Vote, 50)), Dur(f.P50()))
	if len(f.Minimum) > 0 {
		fmt.Fprintf(w, "; beside it the design's minimum vote %.2f, the floor's pieces in series %.2f", r.over(f.Minimum), r.over(f.Series))
	}
	fmt.Fprintln(w, ")")
	if m := r.MinimumLoad; m != nil {
		votes := ""
		if v := &r.Votes; v.Elapsed > 0 {
			votes = fmt.Sprintf(", %.0f in the votes phase", v.PerSecond(v.Votes))
		}
		fmt.Fprintf(w, "verified votes/s: %.0f in the loaded phase%s (target ≥ 5000; beside it the design's minimum vote under the same load %.0f)\n", r.Loaded.PerSecond(r.Loaded.Votes), votes, m.PerSecond())
	}
}

// over is the p50 of ds over the floor.
func (r *Report) over(ds []time.Duration) float64 {
	f := r.Floor.P50()
	if f <= 0 {
		return 0
	}
	return float64(pct(ds, 50)) / float64(f)
}

func (r *Report) phase(w io.Writer, p *Phase) {
	fmt.Fprintf(w, "  vote path (reaction POST → answer)  p50 %8s  p99 %8s\n", Dur(pct(p.Vote, 50)), Dur(pct(p.Vote, 99)))
	fmt.Fprintf(w, "  reaction → waiter                   p50 %8s  p99 %8s\n", Dur(pct(p.Waiter, 50)), Dur(pct(p.Waiter, 99)))
	fmt.Fprintf(w, "  create (POST /v1/requests)          p50 %8s  p99 %8s\n", Dur(pct(p.Create, 50)), Dur(pct(p.Create, 99)))
}

// machine describes where the run happened.
func machine() string {
	model := ""
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = ", " + strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	return fmt.Sprintf("%s/%s, %d CPUs (GOMAXPROCS %d)%s, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), model, runtime.Version())
}

// checkAudit reads the gateway's audit stream until every request run has
// its decision record (the outbox delivers them a moment after the
// decision) or 15 s pass, and counts them.
func (b *run) checkAudit(ctx context.Context, st *qredis.Store) *AuditCheck {
	b.mu.Lock()
	ids := slices.Clone(b.ids)
	b.mu.Unlock()
	ours := make(map[string]bool, len(ids))
	for _, id := range ids {
		ours[id] = true
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		a := &AuditCheck{Requests: len(ours)}
		decisions := map[string]int{}
		var after uint64
		for {
			recs, err := st.AuditRecords(ctx, after, 5000)
			if err != nil {
				return &AuditCheck{Err: err.Error()}
			}
			if len(recs) == 0 {
				break
			}
			for _, line := range recs {
				var rec struct {
					Seq       uint64 `json:"seq"`
					Type      string `json:"type"`
					RequestID string `json:"request_id"`
				}
				if err := json.Unmarshal(line, &rec); err != nil {
					return &AuditCheck{Err: "audit record: " + err.Error()}
				}
				after = rec.Seq
				if !ours[rec.RequestID] {
					continue
				}
				switch rec.Type {
				case "decision":
					decisions[rec.RequestID]++
					a.Decisions++
				case "vote":
					a.Votes++
				}
			}
		}
		for id := range ours {
			switch n := decisions[id]; {
			case n == 0:
				a.Missing++
			case n > 1:
				a.Twice++
			}
		}
		if a.Missing == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return a
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// printSteps says where the unloaded votes' time went in the gateway,
// each step beside the floor's piece it compares with.
func (r *Report) printSteps(w io.Writer) {
	if r.Handler.N == 0 {
		return
	}
	f := &r.Floor
	fmt.Fprintf(w, "  where an unloaded vote's time went in the gateway (each step's p50; p50s need not add up):\n")
	for _, s := range r.Steps {
		beside := ""
		switch s.Name {
		case httpapi.StepVerify:
			beside = "the floor's verify " + Dur(pct(f.Verify, 50))
		case qredis.StepBatchRoundTrip:
			beside = "the floor's PING " + Dur(pct(f.Redis, 50))
		}
		fmt.Fprintf(w, "    %-54s %8s  (n=%d) %s\n", s.Name, Dur(s.P50), s.N, beside)
	}
	fmt.Fprintf(w, "    %-54s %8s  (n=%d)\n", "the vote's call in the gateway, in all", Dur(r.Handler.P50), r.Handler.N)
	// The two p50s are of different samples (the client's clock and the
	// gateway's): with few or noisy votes the call's can be the larger.
	out := "—"
	if d := pct(r.Unloaded.Vote, 50) - r.Handler.P50; d > 0 {
		out = Dur(d)
	}
	fmt.Fprintf(w, "    %-54s %8s  the floor's HTTP round trip %s\n", "outside it: HTTP to and from the client (vote p50 less)", out, Dur(pct(f.HTTP, 50)))
}
