package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

// lockDataDir takes the data dir's lock: one data dir, one gateway (two
// would interleave one audit chain from two heads).
func lockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, "serve.lock")
	fl := flock.New(path)
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	if !ok {
		return nil, fmt.Errorf("another `signoff serve` is already running on data dir %s (it holds %s); "+
			"stop it, or give this one its own SIGNOFF_DATA_DIR (replicas share a Redis, not a data dir)", dir, path)
	}
	return func() { fl.Unlock() }, nil
}

// openAudit opens the gateway's audit log on the store's shared chain.
func openAudit(ctx context.Context, a *app, cfg *config, key *signing.Key, store *qredis.Store, log *slog.Logger) (*signing.AuditLog, error) {
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opt := signing.AuditOptions{
		Store:         store,
		StoreHoldsAll: cfg.RedisURL != "",
		Warn:          func(msg string) { log.Warn(msg) },
	}
	if a.auditOptions != nil {
		a.auditOptions(&opt)
	}
	audit, err := signing.OpenAuditWith(octx, cfg.AuditPath, key, opt)
	if err != nil {
		return nil, err
	}
	if a.auditOpened != nil {
		a.auditOpened(audit)
	}
	seq, _ := audit.Head()
	log.Info("audit log", "path", cfg.AuditPath, "records", seq, "checkpoint", cfg.AuditPath+".checkpoint")
	return audit, nil
}
