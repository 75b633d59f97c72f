package redis

import (
	"context"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/signing"
)

// The store keeps the newest checkpoint any replica published, apart from
// the chain (a witness: a log cut shorter than it, or different at its
// height, is caught). Only a higher seq replaces it, so a gateway that
// restarts on a cut log cannot lower it.

func (s *Store) auditWitnessKey() string { return s.prefix + ":{audit}:witness" }

// auditWitnessScript keeps ARGV[2] (a checkpoint line) as the witness if
// its seq ARGV[1] is higher than the kept one's. KEYS: 1 witness hash.
var auditWitnessScript = goredis.NewScript(`
local cur = tonumber(redis.call('HGET', KEYS[1], 'seq') or '0')
if tonumber(ARGV[1]) <= cur then return 0 end
redis.call('HSET', KEYS[1], 'seq', ARGV[1], 'line', ARGV[2])
return 1
`)

// AuditWitness is the store as a witness target.
func (s *Store) AuditWitness() signing.WitnessTarget { return storeWitness{s} }

type storeWitness struct{ s *Store }

func (w storeWitness) Name() string { return "the store's witness" }

func (w storeWitness) Publish(ctx context.Context, wt signing.Witness) error {
	if err := auditWitnessScript.Run(ctx, w.s.rdb, []string{w.s.auditWitnessKey()}, wt.Seq, wt.Line).Err(); err != nil {
		return unavailable("audit witness", err)
	}
	return nil
}

func (w storeWitness) Newest(ctx context.Context, signer string) (signing.Witness, bool, error) {
	line, err := w.s.rdb.HGet(ctx, w.s.auditWitnessKey(), "line").Result()
	if errors.Is(err, goredis.Nil) {
		return signing.Witness{}, false, nil
	}
	if err != nil {
		return signing.Witness{}, false, unavailable("audit witness", err)
	}
	wt, err := signing.ParseWitness([]byte(line), signer)
	if err != nil {
		return signing.Witness{}, false, fmt.Errorf("the store's witness: %w", err)
	}
	return wt, true, nil
}
