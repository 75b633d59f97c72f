package redis_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

// export reads the store's whole chain, as `signoff audit export` does.
func export(t *testing.T, s *qredis.Store) []byte {
	t.Helper()
	var out bytes.Buffer
	var after uint64
	for {
		lines, err := s.AuditRecords(context.Background(), after, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			out.Write(l)
			out.WriteByte('\n')
			after++
		}
		if len(lines) < 100 {
			return out.Bytes()
		}
	}
}

func verify(t *testing.T, b []byte, key *signing.Key) *signing.AuditReport {
	t.Helper()
	rep := signing.VerifyChain(bytes.NewReader(b), signing.VerifyOptions{Signer: key.PublicKey()})
	if !rep.OK() {
		t.Fatalf("chain does not verify: break %v, truncated %v", rep.Break, rep.Truncated)
	}
	return rep
}

// TestAuditOneChainForAllReplicas: three replicas append at once to one
// store; the store holds one chain in one order, and every replica's file
// is a whole copy of it that verifies on its own.
func TestAuditOneChainForAllReplicas(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			key := signing.NewKey()
			dir := t.TempDir()
			var logs []*signing.AuditLog
			for i := range 3 {
				l, err := signing.OpenAuditWith(context.Background(), filepath.Join(dir, string(rune('a'+i))+".jsonl"), key,
					signing.AuditOptions{Store: srv.Store(t), CheckpointEvery: 25})
				if err != nil {
					t.Fatal(err)
				}
				logs = append(logs, l)
			}
			var wg sync.WaitGroup
			for i, l := range logs {
				for j := range 40 {
					wg.Go(func() {
						if err := l.Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r", Data: i*100 + j}); err != nil {
							t.Error(err)
						}
					})
				}
			}
			wg.Wait()
			for _, l := range logs {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
			store := srv.Store(t)
			all := export(t, store)
			rep := verify(t, all, key)
			if rep.Records < 120 || rep.Uncovered != 0 {
				t.Fatalf("store chain: %d records, %d uncovered; want ≥120 and all covered", rep.Records, rep.Uncovered)
			}
			// Each file is a prefix of the store's chain (a replica that
			// closed first has not seen the others' later records).
			for i := range 3 {
				b, _ := os.ReadFile(filepath.Join(dir, string(rune('a'+i))+".jsonl"))
				verify(t, b, key)
				if !bytes.HasPrefix(all, b) {
					t.Errorf("replica %d's file is not a copy of the store's chain", i)
				}
			}
			// A new container with an empty data dir joins: it copies the
			// whole chain and continues it.
			l, err := signing.OpenAuditWith(context.Background(), filepath.Join(t.TempDir(), "new.jsonl"), key, signing.AuditOptions{Store: store})
			if err != nil {
				t.Fatal(err)
			}
			l.Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r", Data: "new"})
			l.Close()
			verify(t, export(t, store), key)
		})
	}
}

// TestAuditFileAheadOfAnEmptyStore: the embedded store starts empty on
// every restart; the file's verified head seeds it and the chain goes on.
func TestAuditFileAheadOfAnEmptyStore(t *testing.T) {
	key := signing.NewKey()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for range 2 {
		srv := bottest.Start(t, "embedded")
		l, err := signing.OpenAuditWith(context.Background(), path, key, signing.AuditOptions{Store: srv.Store(t)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := l.Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r", Data: i}); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
	}
	b, _ := os.ReadFile(path)
	if rep := verify(t, b, key); rep.Records != 8 {
		t.Fatalf("%d records, want 2×(3+checkpoint)", rep.Records)
	}
}

// TestAuditStoreRestartedEmpty: Redis restarts without persistence; the
// first replica to append gives the store its whole chain back, and a
// replica that had not yet copied anything still gets all of it.
func TestAuditStoreRestartedEmpty(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			key := signing.NewKey()
			dir := t.TempDir()
			open := func(name string) *signing.AuditLog {
				l, err := signing.OpenAuditWith(context.Background(), filepath.Join(dir, name), key,
					signing.AuditOptions{Store: srv.Store(t), StoreHoldsAll: true})
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			a, b := open("a.jsonl"), open("b.jsonl")
			for i := range 5 {
				if err := a.Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r", Data: i}); err != nil {
					t.Fatal(err)
				}
			}
			c := srv.Client(t)
			c.Del(context.Background(), srv.Prefix+":{audit}:head", srv.Prefix+":{audit}:log")
			if err := a.Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r", Data: "after"}); err != nil {
				t.Fatalf("append after the store lost its chain: %v", err)
			}
			if err := b.Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r", Data: "b"}); err != nil {
				t.Fatalf("a replica with nothing copied yet: %v", err)
			}
			a.Close()
			b.Close()
			all := export(t, srv.Store(t))
			if rep := verify(t, all, key); rep.Records < 7 {
				t.Fatalf("store chain: %d records, want the whole chain back", rep.Records)
			}
			bb, _ := os.ReadFile(filepath.Join(dir, "b.jsonl"))
			verify(t, bb, key)
		})
	}
}

// TestAuditStoreRefilledByAReplicaThatSawLess: Redis restarts empty and
// the first replica to append had not copied the last records; the
// replica that had them follows the store's chain and keeps its own
// records aside, and every chain still verifies.
func TestAuditStoreRefilledByAReplicaThatSawLess(t *testing.T) {
	srv := bottest.Start(t, "embedded")
	key := signing.NewKey()
	dir := t.TempDir()
	open := func(name string) *signing.AuditLog {
		l, err := signing.OpenAuditWith(context.Background(), filepath.Join(dir, name), key,
			signing.AuditOptions{Store: srv.Store(t), StoreHoldsAll: true})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := open("a.jsonl"), open("b.jsonl")
	for i := range 2 {
		a.Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r", Data: i})
	}
	srv.Client(t).Del(context.Background(), srv.Prefix+":{audit}:head", srv.Prefix+":{audit}:log")
	if err := b.Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r", Data: "b"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r", Data: "a after"}); err != nil {
		t.Fatalf("replica with the longer log after the store was refilled: %v", err)
	}
	a.Close()
	b.Close()
	verify(t, export(t, srv.Store(t)), key)
	for _, n := range []string{"a.jsonl", "b.jsonl"} {
		bb, _ := os.ReadFile(filepath.Join(dir, n))
		verify(t, bb, key)
	}
	if side, _ := filepath.Glob(filepath.Join(dir, "a.jsonl.unverified-*")); len(side) != 1 {
		t.Errorf("replica A's own records were not kept aside: %v", side)
	}
}
