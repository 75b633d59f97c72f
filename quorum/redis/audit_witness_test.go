package redis_test

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/signing"
)

// TestStoreWitnessKeepsTheHighestCheckpoint: a replica restarted on a cut
// log publishes lower checkpoints; the store's witness keeps the higher
// one it had, and refuses nothing the gateway did not sign.
func TestStoreWitnessKeepsTheHighestCheckpoint(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			key := signing.NewKey()
			var lines [][]byte
			l, err := signing.OpenAuditWith(context.Background(), filepath.Join(t.TempDir(), "a.jsonl"), key,
				signing.AuditOptions{OnCheckpoint: func(line []byte) { lines = append(lines, bytes.Clone(line)) }})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				l.Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r", Data: 1})
				l.Checkpoint(context.Background())
			}
			l.Close()
			w := srv.Store(t).AuditWitness()
			hi, _ := signing.ParseWitness(lines[1], key.PublicKey())
			lo, _ := signing.ParseWitness(lines[0], key.PublicKey())
			ctx := context.Background()
			if err := w.Publish(ctx, hi); err != nil {
				t.Fatal(err)
			}
			if err := w.Publish(ctx, lo); err != nil {
				t.Fatal(err)
			}
			got, ok, err := w.Newest(ctx, key.PublicKey())
			if err != nil || !ok || got.Seq != hi.Seq || got.Hash != hi.Hash {
				t.Errorf("the store's witness is %+v %v %v, want seq %d", got.Head, ok, err, hi.Seq)
			}
			if _, _, err := w.Newest(ctx, signing.NewKey().PublicKey()); err == nil {
				t.Error("the witness was believed under another key")
			}
		})
	}
}

// TestRefusalsAreAuditedWhileReplicasRestoreTheChain: the store comes back
// empty and three replicas, each with the whole chain in its file, record
// at once (refused calls, say): each gives the store the chain back, and
// none of their records fails because another restored it first.
func TestRefusalsAreAuditedWhileReplicasRestoreTheChain(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			store := srv.Store(t)
			key := signing.NewKey()
			dir := t.TempDir()
			var logs []*signing.AuditLog
			for i := range 3 {
				l, err := signing.OpenAuditWith(context.Background(), filepath.Join(dir, string(rune('a'+i))+".jsonl"), key,
					signing.AuditOptions{Store: store, StoreHoldsAll: true})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				logs = append(logs, l)
			}
			for range 30 {
				logs[0].Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r", Data: 1})
			}
			for _, l := range logs[1:] {
				if err := l.CatchUp(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			c := srv.Client(t)
			keys, _ := c.Keys(context.Background(), srv.Prefix+":*").Result()
			for _, k := range keys {
				c.Del(context.Background(), k)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 30)
			for _, l := range logs {
				for range 10 {
					wg.Go(func() {
						errs <- l.Append(context.Background(), bot.AuditEntry{Type: "auth", Data: map[string]string{"result": "unauthorized"}})
					})
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Errorf("a refusal not audited while the chain was restored: %v", err)
				}
			}
			rep := verify(t, export(t, store), key)
			if rep.Records < 60 {
				t.Errorf("the store's chain holds %d records, want the 30 restored and 30 refusals", rep.Records)
			}
		})
	}
}
