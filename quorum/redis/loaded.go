package redis

import (
	"context"
	"encoding/json"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// MarkLoaded records that what serve loads at start (the personas) is in
// the store. A Redis that comes back empty has lost this key with the
// rest, which is how a replica notices (see Loaded).
func (s *Store) MarkLoaded(ctx context.Context, by string) error {
	b, _ := json.Marshal(map[string]any{"by": by, "at": time.Now().UTC()})
	if err := s.rdb.Set(ctx, s.key("loaded"), b, 0).Err(); err != nil {
		return unavailable("mark loaded", err)
	}
	return nil
}

// Loaded reports whether the store still holds the loaded marker and
// every persona named. The personas are checked one by one because, on a
// Cluster, they may sit on masters other than the marker's.
func (s *Store) Loaded(ctx context.Context, personas []string) (bool, error) {
	cmds, err := s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		pl.Exists(ctx, s.key("loaded"))
		for _, n := range personas {
			pl.Exists(ctx, s.key("persona", n))
		}
		return nil
	})
	if err != nil {
		return false, unavailable("check loaded", err)
	}
	for _, c := range cmds {
		if c.(*goredis.IntCmd).Val() != 1 {
			return false, nil
		}
	}
	return true, nil
}
