package signing

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signoff/signoff/bot"
)

// witnessedLog is a log whose checkpoints are published to a data dir
// witness file, as serve does.
func witnessedLog(t *testing.T, path, witness string) (*AuditLog, *Witnesses) {
	t.Helper()
	ws := &Witnesses{Targets: []WitnessTarget{FileWitness{Path: witness}}, Signer: auditGateway.PublicKey()}
	l, err := OpenAuditWith(context.Background(), path, auditGateway, AuditOptions{OnCheckpoint: ws.Checkpointed})
	if err != nil {
		t.Fatal(err)
	}
	ws.Check(context.Background(), l)
	return l, ws
}

func appendN(t *testing.T, l *AuditLog, n int) {
	t.Helper()
	for range n {
		if err := l.Append(context.Background(), bot.AuditEntry{Type: "request", RequestID: "r", Data: map[string]string{"a": "b"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestAgentCannotCutTheLogUnderItsWitness: the log is cut back to an
// earlier checkpoint and reopened: the gateway finds its witness ahead,
// fails Ready saying so, publishes nothing over the witness, and verify
// reports first the records missing, then the fork once it writes again.
func TestAgentCannotCutTheLogUnderItsWitness(t *testing.T) {
	dir := t.TempDir()
	path, witness := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "audit.witness")
	l, ws := witnessedLog(t, path, witness)
	appendN(t, l, 2) // checkpoint at seq 3
	first, _ := os.ReadFile(path)
	appendN(t, l, 3) // checkpoint at seq 7
	ws.Flush(context.Background())
	l.Close()
	w, ok, err := FileWitness{Path: witness}.Newest(context.Background(), auditGateway.PublicKey())
	if err != nil || !ok || w.Seq != 7 {
		t.Fatalf("the witness holds %+v, %v, %v; want seq 7", w, ok, err)
	}

	os.WriteFile(path, first, 0o600)
	rep := VerifyChain(bytes.NewReader(first), VerifyOptions{Signer: auditGateway.PublicKey(), Expect: []Head{w.Head}})
	if rep.OK() || len(rep.Missing) != 1 || rep.Missing[0].Records != 4 {
		t.Errorf("the cut log: missing %+v, want 4 records", rep.Missing)
	}

	l, ws = witnessedLog(t, path, witness)
	if err := ws.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "AUDIT TRUNCATED") || !strings.Contains(err.Error(), "4 record(s) are missing") {
		t.Errorf("Ready on the cut log: %v", err)
	}
	appendN(t, l, 6) // past seq 7: a fork
	ws.Flush(context.Background())
	l.Close()
	if w2, _, _ := (FileWitness{Path: witness}).Newest(context.Background(), auditGateway.PublicKey()); w2.Seq != 7 || w2.Hash != w.Hash {
		t.Errorf("the witness moved to seq %d: the cut chain was published over it", w2.Seq)
	}
	f, _ := os.Open(path)
	defer f.Close()
	rep = VerifyChain(f, VerifyOptions{Signer: auditGateway.PublicKey(), Expect: []Head{w.Head}})
	if rep.Fork == nil || rep.Fork.Seq != 7 || !rep.SignedFork {
		t.Errorf("the rewritten log: fork %v (signed %v), want a signed fork at seq 7", rep.Fork, rep.SignedFork)
	}
}

func TestFileWitnessKeepsTheHighestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	path, witness := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "audit.witness")
	l, err := OpenAudit(path, auditGateway)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var lines [][]byte
	l.opt.OnCheckpoint = func(line []byte) { lines = append(lines, bytes.Clone(line)) }
	appendN(t, l, 1)
	appendN(t, l, 1)
	fw := FileWitness{Path: witness}
	hi, _ := ParseWitness(lines[1], auditGateway.PublicKey())
	lo, _ := ParseWitness(lines[0], auditGateway.PublicKey())
	fw.Publish(context.Background(), hi)
	fw.Publish(context.Background(), lo)
	if w, _, _ := fw.Newest(context.Background(), auditGateway.PublicKey()); w.Seq != hi.Seq {
		t.Errorf("the witness holds seq %d after a lower one was published, want %d", w.Seq, hi.Seq)
	}
	if _, _, err := fw.Newest(context.Background(), NewKey().PublicKey()); err == nil {
		t.Error("a witness under another key was believed")
	}
}
