package main

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/signoff/signoff/bot"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// registerPending adds signoff_pending_requests: read from the store at
// each scrape, so every replica reports the fleet's number.
func registerPending(reg prometheus.Registerer, store *qredis.Store) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "signoff_pending_requests", Help: "Requests waiting for a decision (all replicas sharing the store).",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, err := store.PendingCount(ctx)
		if err != nil {
			return -1 // the store did not answer
		}
		return float64(n)
	}))
}

// registerWaiters counts the callers parked on this replica for a
// decision: agents blocked on a person (hooks, `signoff request`, MCP
// calls), as a replica's own number (the pending gauge is the fleet's).
func registerWaiters(reg prometheus.Registerer, g *bot.Gateway) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "signoff_waiters", Help: "Callers waiting on this replica for a request's decision (long-polls, hooks, MCP calls).",
	}, func() float64 { return float64(g.Waiting()) }))
}

// registerBuildInfo adds signoff_build_info{version, commit, goversion} 1:
// which build each replica runs.
func registerBuildInfo(reg prometheus.Registerer) {
	v, commit, gov := buildVersion()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "signoff_build_info", Help: "The build this gateway runs: its version, commit and Go version (always 1).",
	}, []string{"version", "commit", "goversion"})
	g.WithLabelValues(v, commit, gov).Set(1)
	reg.MustRegister(g)
}
