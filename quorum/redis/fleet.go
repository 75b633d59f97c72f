package redis

import (
	"context"
	"errors"

	goredis "github.com/redis/go-redis/v9"
)

// FleetKeyName is the key holding the gateway key of every replica on
// this store.
func (s *Store) FleetKeyName() string { return s.key("fleet", "gatewaykey") }

// ClaimGatewayKey records npub as the fleet's gateway key unless one is
// recorded already, and returns the one recorded. Replicas sharing a store
// must share a key: each opens the receipts the others seal, and reads a
// decision under another key as denied.
func (s *Store) ClaimGatewayKey(ctx context.Context, npub string) (string, error) {
	for range 3 {
		ok, err := s.rdb.SetNX(ctx, s.FleetKeyName(), npub, 0).Result()
		if err != nil {
			return "", unavailable("claim the fleet's gateway key", err)
		}
		if ok {
			return npub, nil
		}
		cur, err := s.rdb.Get(ctx, s.FleetKeyName()).Result()
		if errors.Is(err, goredis.Nil) {
			continue // removed meanwhile
		}
		if err != nil {
			return "", unavailable("read the fleet's gateway key", err)
		}
		return cur, nil
	}
	return "", unavailable("claim the fleet's gateway key", errors.New("the key keeps disappearing"))
}
