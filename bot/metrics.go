package bot

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the gateway's Prometheus series. A nil *Metrics records
// nothing.
type Metrics struct {
	requests       *prometheus.CounterVec
	votes          *prometheus.CounterVec
	latency        prometheus.Histogram
	submittedTotal prometheus.Counter
	rateLimited    *prometheus.CounterVec
	checks         *prometheus.CounterVec
	httpLatency    *prometheus.HistogramVec
	platform       platformMetrics
}

// The limits that answer 429 (the label of signoff_rate_limited_total):
// the API's per-client rate, the bad-token allowance of an address, and
// the per-persona publish rate.
const (
	LimitClient   = "client"
	LimitBadToken = "bad_token"
	LimitPublish  = "publish"
)

// NewMetrics registers the gateway's series with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "signoff_requests_total", Help: "Decided requests by outcome (approved, denied, expired, withdrawn).",
		}, []string{"outcome"}),
		votes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "signoff_votes_total", Help: "Votes received by result (counted, ignored, duplicate).",
		}, []string{"result"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "signoff_decision_seconds",
			Help:    "Time from a request's submission to its decision.",
			Buckets: []float64{0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600},
		}),
		submittedTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "signoff_requests_submitted_total", Help: "Requests submitted.",
		}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "signoff_rate_limited_total", Help: "API calls refused with 429, by the limit that refused them (client, bad_token, publish).",
		}, []string{"limit"}),
	}
	m.checks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "signoff_checks_total", Help: "POST /v1/check answers (most of the hook's traffic) by decision: allow, deny, ask.",
	}, []string{"decision"})
	m.httpLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "signoff_http_request_duration_seconds",
		Help: "Time to answer an API call, by route (its pattern); a long-poll counts its wait.",
		// Votes and checks answer in milliseconds; long-polls last up to a minute.
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 30, 60, 120},
	}, []string{"route"})
	for _, l := range []string{LimitClient, LimitBadToken, LimitPublish} {
		m.rateLimited.WithLabelValues(l)
	}
	for _, d := range []string{"allow", "deny", "ask"} {
		m.checks.WithLabelValues(d)
	}
	reg.MustRegister(m.requests, m.votes, m.latency, m.submittedTotal, m.rateLimited, m.checks, m.httpLatency)
	m.platform = newPlatformMetrics(reg, m)
	return m
}

func (m *Metrics) submitted() {
	if m != nil {
		m.submittedTotal.Inc()
	}
}

// RateLimited counts a call refused with 429 by limit (LimitClient,
// LimitBadToken, LimitPublish); the HTTP layer calls it.
func (m *Metrics) RateLimited(limit string) {
	if m != nil {
		m.rateLimited.WithLabelValues(limit).Inc()
	}
}

// Checked counts a /v1/check answer by its decision; the HTTP layer calls it.
func (m *Metrics) Checked(decision string) {
	if m != nil {
		m.checks.WithLabelValues(decision).Inc()
	}
}

// ObserveHTTP records how long route (a pattern such as
// "POST /v1/requests") took to answer; the HTTP layer calls it.
func (m *Metrics) ObserveHTTP(route string, d time.Duration) {
	if m != nil {
		m.httpLatency.WithLabelValues(route).Observe(d.Seconds())
	}
}

func (m *Metrics) vote(r Result) {
	if m != nil {
		m.votes.WithLabelValues(string(r)).Inc()
	}
}

func (m *Metrics) decision(r *Request) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(string(r.Status)).Inc()
	if r.DecidedAt != nil {
		m.latency.Observe(r.DecidedAt.Sub(r.CreatedAt).Seconds())
	}
}
