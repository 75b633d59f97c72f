package redis

import (
	"context"
	"errors"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
)

var _ bot.HoldStore = (*Store)(nil)

func (s *Store) holdKey(id string) string { return s.key("req", "{"+id+"}", "holds") }

// Hold counts a requester's long-poll on id; the count lives a day.
func (s *Store) Hold(ctx context.Context, id string) (int64, error) {
	var n *goredis.IntCmd
	_, err := s.rdb.TxPipelined(ctx, func(pl goredis.Pipeliner) error {
		n = pl.Incr(ctx, s.holdKey(id))
		pl.Expire(ctx, s.holdKey(id), 24*time.Hour)
		return nil
	})
	if err != nil {
		return 0, unavailable("hold request", err)
	}
	return n.Val(), nil
}

// Holds returns how many requester long-polls on id have begun.
func (s *Store) Holds(ctx context.Context, id string) (int64, error) {
	n, err := s.rdb.Get(ctx, s.holdKey(id)).Int64()
	if errors.Is(err, goredis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, unavailable("read holds", err)
	}
	return n, nil
}
