package httpapi

import (
	"net/http"
	"sync"
	"time"
)

// Every 429 the API answers — the per-client rate (guard.go), the bad-token
// allowance (auth.go), the gateway's per-persona publish rate (publish.go)
// — is counted (Server.OnRateLimited) and logged at Warn, but not line by
// line: a client's first refusal is logged at once, later ones at most once
// per refusalLogEvery with how many were refused since the line before, so
// a flood of calls cannot flood the log. The counter is the exact count.

// refusalLogEvery is the least time between two log lines for one client.
const refusalLogEvery = 10 * time.Second

// rateLimited counts and logs a call refused with 429 by limit (one of
// bot.LimitClient, bot.LimitBadToken, bot.LimitPublish). key tells the
// clients apart; who names one for people; msg is what the call was told.
func (s *Server) rateLimited(r *http.Request, limit, key, who string, retry time.Duration, msg string) {
	if s.OnRateLimited != nil {
		s.OnRateLimited(limit)
	}
	if s.refusals == nil {
		return
	}
	n, who := s.refusals.note(limit+" "+key, who, s.now())
	if n == 0 {
		return
	}
	s.log().Warn("calls refused: rate limited", "limit", limit, "client", who, "method", r.Method, "path", r.URL.Path,
		"retry_after", retry.String(), "refused", n, "reason", msg)
}

// refusalLog is when each client's last line was logged and how many of
// its refusals are in no line yet, for at most maxLimiters clients (past
// that, during a flood from that many, the rest share one entry).
type refusalLog struct {
	mu      sync.Mutex
	clients map[string]*refusals
	swept   time.Time
}

type refusals struct {
	logged  time.Time // its last line
	pending int       // refused since
}

// others is the entry of the clients past maxLimiters.
const others = "(others)"

// note records one refusal of key at now. It returns how many refusals
// the line due now reports, and whom it names; 0 when no line is due.
func (l *refusalLog) note(key, who string, now time.Time) (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clients == nil {
		l.clients = map[string]*refusals{}
	}
	c := l.clients[key]
	if c == nil && len(l.clients) >= maxLimiters {
		l.sweep(now)
		if len(l.clients) >= maxLimiters {
			key, who = others, "many clients, among them "+who
			c = l.clients[key]
		}
	}
	if c == nil {
		c = &refusals{}
		l.clients[key] = c
	}
	c.pending++
	if !c.logged.IsZero() && now.Sub(c.logged) < refusalLogEvery {
		return 0, ""
	}
	n := c.pending
	c.logged, c.pending = now, 0
	return n, who
}

// sweep forgets the clients whose last line is old enough for their next
// refusal to be logged anyway, at most once per refusalLogEvery (a flood
// from many addresses must not make every refusal walk the table).
func (l *refusalLog) sweep(now time.Time) {
	if now.Sub(l.swept) < refusalLogEvery {
		return
	}
	l.swept = now
	for k, c := range l.clients {
		if now.Sub(c.logged) >= refusalLogEvery {
			delete(l.clients, k)
		}
	}
}
