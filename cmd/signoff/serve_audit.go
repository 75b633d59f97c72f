package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	signoffnostr "github.com/signoff/signoff/adapters/nostr"
	"github.com/signoff/signoff/bot"
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

// openAudit opens the gateway's audit log on the store's shared chain,
// its checkpoints published to the witnesses, and checks the log against
// the newest checkpoint they hold.
func openAudit(ctx context.Context, a *app, cfg *config, key *signing.Key, store *qredis.Store, ws *signing.Witnesses, log *slog.Logger) (*signing.AuditLog, error) {
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opt := signing.AuditOptions{
		Store:         store,
		StoreHoldsAll: cfg.RedisURL != "",
		Warn:          func(msg string) { log.Warn(msg) },
		OnCheckpoint:  ws.Checkpointed,
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
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	ws.Check(wctx, audit)
	cancel()
	seq, _ := audit.Head()
	names := make([]string, len(ws.Targets))
	for i, t := range ws.Targets {
		names[i] = t.Name()
	}
	log.Info("audit log", "path", cfg.AuditPath, "records", seq, "checkpoint", cfg.AuditPath+".checkpoint", "witnesses", names)
	return audit, nil
}

// witnessFile is where the gateway keeps its newest checkpoint in its data
// dir (hidden from the sandbox), apart from the log.
func witnessFile(cfg *config) string { return filepath.Join(cfg.DataDir, "audit.witness") }

// auditWitnesses are where serve publishes its checkpoints: the data dir's
// witness file, the store when it is a real Redis (the embedded one dies
// with the gateway), and every Nostr relay a persona's channel names.
func auditWitnesses(cfg *config, store *qredis.Store, key *signing.Key, personas []bot.Persona, log *slog.Logger) *signing.Witnesses {
	ws := &signing.Witnesses{Signer: key.PublicKey(), Logger: log}
	ws.Targets = append(ws.Targets, signing.FileWitness{Path: witnessFile(cfg)})
	if cfg.RedisURL != "" {
		ws.Targets = append(ws.Targets, store.AuditWitness())
	}
	for _, u := range personaRelays(personas) {
		ws.Targets = append(ws.Targets, signing.RelayWitness{URL: u, Key: key, Dial: signoffnostr.DialRelay})
	}
	return ws
}
