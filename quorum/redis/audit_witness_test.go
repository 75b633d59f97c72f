package redis_test

import (
	"bytes"
	"context"
	"path/filepath"
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
