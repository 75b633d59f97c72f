package redis

import (
	"context"
	"errors"

	goredis "github.com/redis/go-redis/v9"

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

var _ bot.ChangeStore = (*Store)(nil)

// Unchanged reports whether request id is still pending with seen answers
// stored: one round trip of two small replies, no decoding.
func (s *Store) Unchanged(ctx context.Context, id string, seen int) (bool, error) {
	k := s.requestKeys(id)
	var st *goredis.StringCmd
	var n *goredis.IntCmd
	_, err := s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		st = pl.HGet(ctx, k[0], "status")
		n = pl.LLen(ctx, k[1])
		return nil
	})
	if errors.Is(err, goredis.Nil) {
		return false, nil // gone: the full read says so
	}
	if err != nil {
		return false, unavailable("look at request", err)
	}
	return st.Val() == string(bot.Pending) && n.Val() == int64(seen), nil
}
