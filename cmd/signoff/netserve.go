package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/netpolicy"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// startNetwork wires the network policy service for serve: the boundary,
// the policy file as the first (or an edited) revision, the watch that
// applies approvals. The caller closes it.
func startNetwork(ctx context.Context, cfg *config, g *bot.Gateway, store *qredis.Store, audit bot.Auditor, log *slog.Logger) (*netpolicy.Service, error) {
	svc := &netpolicy.Service{Gateway: g, Store: store, Decisions: store.WatchFinal, Audit: audit, Logger: log}
	if cfg.NetBoundary != "" {
		data, err := os.ReadFile(cfg.NetBoundary)
		if err != nil {
			return nil, fmt.Errorf("SIGNOFF_NET_BOUNDARY: %w", err)
		}
		b, ps := netpolicy.ParseBoundary(cfg.NetBoundary, data)
		if len(ps) > 0 {
			return nil, fmt.Errorf("the network boundary has errors:\n%w", ps)
		}
		svc.Boundary = b
		log.Info("network boundary", "file", cfg.NetBoundary, "patterns", len(b.Patterns))
	}
	if err := svc.Start(ctx); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(cfg.NetPolicy)
	switch {
	case errors.Is(err, os.ErrNotExist) && cfg.NetPolicy == "configs/network/policy.yaml":
		data = []byte("hosts: []\n")
		log.Info("network policy: configs/network/policy.yaml not found here; starting with no doors")
	case err != nil:
		svc.Close()
		return nil, fmt.Errorf("SIGNOFF_NET_POLICY: %w", err)
	}
	rev, err := svc.Seed(ctx, cfg.NetPolicy, data)
	if err != nil {
		svc.Close()
		return nil, fmt.Errorf("network policy %s (fix it, or check it with `signoff net policy`):\n%w", cfg.NetPolicy, err)
	}
	log.Info("network policy", "file", cfg.NetPolicy, "revision", rev.N, "entries", len(rev.Policy.Hosts), "why", rev.Why)
	return svc, nil
}
