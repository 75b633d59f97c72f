package redis_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// BenchmarkRecordVoteAudited is the vote script as the gateway runs it
// under `signoff bench --votes 10`: ten members, approvalQuorum 10, each
// vote signed and stored with its audit record, the tenth deciding. On
// real Redis it also reports the script's own time in Redis per vote
// (redis-µs/vote, from INFO commandstats), which is the part of the vote
// path's Redis round trip beyond a PING.
func BenchmarkRecordVoteAudited(b *testing.B) {
	for _, backend := range bottest.Backends() {
		b.Run(backend, func(b *testing.B) {
			srv := bottest.Start(b, backend)
			s := srv.Store(b)
			ctx := context.Background()
			p, voters := manyMembers(10)
			p.ApprovalQuorum = 10
			reqs := make([]string, (b.N+len(voters)-1)/len(voters))
			for i := range reqs {
				reqs[i] = newRequest(b, s, p).ID
			}
			line := []byte(`{"seq":0,"type":"vote","request":"` + strings.Repeat("x", 26) + `","data":{"voter":"` + strings.Repeat("ab", 32) + `","choice":"approve"}}`)
			prev := ""
			var rdb goredis.UniversalClient
			if backend == "redis" {
				rdb = srv.Client(b)
			}
			before := scriptUsec(b, rdb)
			b.ResetTimer()
			for i := range b.N {
				hash := strconv.Itoa(i + 1)
				out, _, err := s.RecordVoteAudited(ctx, bot.Ballot{
					RequestID: reqs[i/len(voters)], Voter: voters[i%len(voters)], Choice: bot.Approve,
					Proof: bot.ProofSigned, DedupKey: fmt.Sprint("e", i), Reason: "",
					At: time.Now(),
				}, bot.AuditRef{Seq: uint64(i + 1), Prev: prev, Hash: hash, Line: line, Shared: true})
				if err != nil || out.Result != bot.Counted {
					b.Fatalf("vote %d = %+v, %v", i, out, err)
				}
				if want := i%len(voters) == len(voters)-1; out.Decided != want {
					b.Fatalf("vote %d decided = %v, want %v", i, out.Decided, want)
				}
				prev = hash
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "votes/s")
			if rdb != nil {
				b.ReportMetric(float64(scriptUsec(b, rdb)-before)/float64(b.N), "redis-µs/vote")
			}
		})
	}
}

// scriptUsec is the time Redis has spent in EVALSHA since its stats were
// reset (0 without a client).
func scriptUsec(b *testing.B, rdb goredis.UniversalClient) int64 {
	if rdb == nil {
		return 0
	}
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(info, "\n") {
		if !strings.HasPrefix(l, "cmdstat_evalsha:") {
			continue
		}
		for _, f := range strings.Split(strings.TrimSpace(l[len("cmdstat_evalsha:"):]), ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
	}
	return 0
}
