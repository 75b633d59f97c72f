package redis

import (
	"context"

	"github.com/signoff/signoff/bot"
)

var (
	_ bot.Notifier      = (*Store)(nil)
	_ bot.SnapshotStore = (*Store)(nil)
)

// Changed publishes id on the decision channel: waiters on every replica
// look again (a vote was counted, the request is still pending).
func (s *Store) Changed(ctx context.Context, id string) error {
	if err := s.rdb.Publish(ctx, s.channel(), id).Err(); err != nil {
		return unavailable("publish change", err)
	}
	return nil
}

// Snapshot returns the persona the request was created under.
func (s *Store) Snapshot(ctx context.Context, id string) (bot.Persona, error) {
	return s.snapshot(ctx, id)
}

// PendingCount is how many requests wait for a decision, across replicas.
func (s *Store) PendingCount(ctx context.Context) (int64, error) {
	n, err := s.rdb.ZCard(ctx, s.key("pending")).Result()
	if err != nil {
		return 0, unavailable("count pending", err)
	}
	return n, nil
}
