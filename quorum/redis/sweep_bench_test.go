package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// BenchmarkSweepUnqueued is one outbox sweep over 10,000 waiting requests
// (none of them orphaned: the common case), beside its floor, one pipelined
// read of the same 10,000 request hashes. Run against the real Redis with
// SIGNOFF_TEST_REDIS_URL set; embedded otherwise.
//
//	go test -run - -bench SweepUnqueued -benchtime 20x ./quorum/redis/
func BenchmarkSweepUnqueued(b *testing.B) {
	const n = 10000
	backend := bottest.Backends()[len(bottest.Backends())-1]
	srv := bottest.Start(b, backend)
	rdb := srv.Client(b)
	s := srv.Store(b)
	ctx := context.Background()
	ids := make([]string, n)
	deadline := time.Now().Add(time.Hour).UnixMilli()
	if _, err := rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		for i := range ids {
			ids[i] = bot.NewID()
			pl.HSet(ctx, srv.Prefix+":req:{"+ids[i]+"}", "status", "pending", "deadline", deadline)
			pl.ZAdd(ctx, srv.Prefix+":pending", goredis.Z{Score: float64(deadline), Member: ids[i]})
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("sweep-%d-pending", n), func(b *testing.B) {
		for b.Loop() {
			rdb.Del(ctx, srv.Prefix+":outbox-sweep")
			if found, err := s.SweepUnqueued(ctx, "bench", 3*time.Second, time.Minute, time.Now()); err != nil || len(found) != 0 {
				b.Fatalf("sweep = %v, %v", found, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/pending")
	})
	b.Run(fmt.Sprintf("floor-hmget-%d", n), func(b *testing.B) {
		for b.Loop() {
			if _, err := rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
				for _, id := range ids {
					pl.HMGet(ctx, srv.Prefix+":req:{"+id+"}", "status", "decided_at")
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/pending")
	})
}
