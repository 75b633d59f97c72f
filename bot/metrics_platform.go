package bot

import "github.com/prometheus/client_golang/prometheus"

// platformMetrics count failed calls to each platform, so an expired token
// or a rate limit shows on a dashboard before people ask why nothing came.
type platformMetrics struct {
	postErrors *prometheus.CounterVec
	editErrors *prometheus.CounterVec
}

// knownPlatforms get their series at zero from the start, so a rate()
// over them works before the first error.
var knownPlatforms = []Platform{Slack, Discord, Nostr}

func newPlatformMetrics(reg prometheus.Registerer, m *Metrics) platformMetrics {
	pm := platformMetrics{
		postErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "signoff_post_errors_total", Help: "Failed posts of a request to a platform.",
		}, []string{"platform"}),
		editErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "signoff_edit_errors_total", Help: "Failed edits of posted messages on a platform (each attempt).",
		}, []string{"platform"}),
	}
	reg.MustRegister(pm.postErrors, pm.editErrors)
	for _, p := range knownPlatforms {
		pm.postErrors.WithLabelValues(string(p))
		pm.editErrors.WithLabelValues(string(p))
	}
	for _, s := range []Status{Approved, Denied, Expired, Withdrawn} {
		m.requests.WithLabelValues(string(s))
	}
	for _, r := range []Result{Counted, Ignored, Duplicate} {
		m.votes.WithLabelValues(string(r))
	}
	return pm
}

func (m *Metrics) postError(p Platform) {
	if m != nil {
		m.platform.postErrors.WithLabelValues(string(p)).Inc()
	}
}

func (m *Metrics) editError(p Platform) {
	if m != nil {
		m.platform.editErrors.WithLabelValues(string(p)).Inc()
	}
}
