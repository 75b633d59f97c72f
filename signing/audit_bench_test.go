package signing

import (
	"context"
	"encoding/hex"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"

	"github.com/signoff/signoff/bot"
)

// BenchmarkAuditAppend is one record on the vote's path now (hash-linked,
// written to the file; checkpoints signed every 1000), beside
// BenchmarkSchnorrSignPerRecord, what each record cost before on top.
func BenchmarkAuditAppend(b *testing.B) {
	l, err := OpenAudit(filepath.Join(b.TempDir(), "audit.jsonl"), auditGateway)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	e := bot.AuditEntry{Type: "vote", RequestID: "r1", Data: map[string]any{"vote": "approve", "voter": "alice"}, Evidence: ntJSON(ntEvent(nil))}
	for b.Loop() {
		if err := l.Append(context.Background(), e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSchnorrSignPerRecord(b *testing.B) {
	sk, _ := hex.DecodeString(auditGateway.secret)
	priv, _ := btcec.PrivKeyFromBytes(sk)
	msg := make([]byte, 32)
	for b.Loop() {
		if _, err := schnorr.Sign(priv, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSchnorrVerify is the verify a vote costs (the gateway's library).
func BenchmarkSchnorrVerify(b *testing.B) {
	sk, _ := hex.DecodeString(auditGateway.secret)
	priv, _ := btcec.PrivKeyFromBytes(sk)
	msg := make([]byte, 32)
	sig, _ := schnorr.Sign(priv, msg)
	pub := priv.PubKey()
	for b.Loop() {
		if !sig.Verify(msg, pub) {
			b.Fatal("verify")
		}
	}
}
