package redis_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/quorum/quorumtest"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// manyMembers is a persona of n members and no approval quorum: every
// approval is counted and none decides.
func manyMembers(n int) (bot.Persona, []bot.Identity) {
	p := quorumtest.Persona(0, 1)
	p.Members = nil
	var ids []bot.Identity
	for i := range n {
		id := quorumtest.NostrID(fmt.Sprint("member", i))
		ids = append(ids, id)
		p.Members = append(p.Members, bot.Person{Name: fmt.Sprint("member", i), Identities: []bot.Identity{id}})
	}
	return p, ids
}

// TestGetReadsOnlyWhatItDecodes: a read is one round trip that asks for
// the hash fields it decodes, not the whole hash (whose persona snapshot is
// most of its bytes), and both lists.
func TestGetReadsOnlyWhatItDecodes(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			rdb := srv.Client(t)
			hook := &bottest.Commands{}
			rdb.AddHook(hook)
			s := qredis.New(rdb, srv.Prefix)
			p, _ := manyMembers(10)
			r := newRequest(t, s, p)
			hook.Reset()
			got, err := s.Get(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if n, hm, all, lr := hook.Trips(), hook.Count("HMGET", r.ID), hook.Count("HGETALL", ""), hook.Count("LRANGE", r.ID); n != 1 || hm != 1 || all != 0 || lr != 2 {
				t.Errorf("get sent %s in %d round trips; want HMGET and 2 LRANGE in 1", hook, n)
			}
			if got.ID != r.ID || got.Action != r.Action || !reflect.DeepEqual(got.Messages, r.Messages) {
				t.Errorf("get = %+v, want %+v", got, r)
			}
		})
	}
}

// BenchmarkGet reads a request with 10 votes and a message, as a waiter
// does after each vote.
func BenchmarkGet(b *testing.B) {
	for _, backend := range bottest.Backends() {
		b.Run(backend, func(b *testing.B) {
			s := bottest.Start(b, backend).Store(b)
			ctx := context.Background()
			p, voters := manyMembers(10)
			r := newRequest(b, s, p)
			for i, v := range voters {
				if _, err := s.RecordVote(ctx, bot.Ballot{RequestID: r.ID, Voter: v, Choice: bot.Approve, Proof: bot.ProofSigned, DedupKey: fmt.Sprint(i)}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				got, err := s.Get(ctx, r.ID)
				if err != nil || len(got.Votes) != 10 {
					b.Fatalf("get: %d votes, %v", len(got.Votes), err)
				}
			}
		})
	}
}
