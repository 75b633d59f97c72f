package signing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"

	"github.com/signoff/signoff/bot"
)

var auditGateway = mustKey("3333333333333333333333333333333333333333333333333333333333333333")

// writeAuditLog writes five records with the gateway key and returns the
// file's path and its lines.
func writeAuditLog(t *testing.T) (string, [][]byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := OpenAudit(path, auditGateway)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	event := ntJSON(ntEvent(nil))
	entries := []bot.AuditEntry{
		{Type: "request", RequestID: "r1", Data: map[string]any{"action": "rm -rf /tmp/x", "status": "pending"}, Evidence: event},
		{Type: "vote", RequestID: "r1", Data: map[string]any{"vote": "approve", "result": "counted"}, Evidence: json.RawMessage("{ \"spaced\" : [1, 2] }")},
		{Type: "vote", RequestID: "r1", Data: map[string]any{"vote": "deny", "result": "ignored"}, Evidence: json.RawMessage("token=abc&user_id=U1")},
		{Type: "decision", RequestID: "r1", Data: map[string]any{"status": "approved", "decided_by": []string{"alice"}}},
		{Type: "vote", RequestID: "r1", Data: map[string]any{"vote": "deny", "result": "ignored"}},
	}
	for _, e := range entries {
		if err := l.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, bytes.SplitAfter(b, []byte("\n"))[:5]
}

func TestAuditLogVerifies(t *testing.T) {
	path, lines := writeAuditLog(t)
	n, err := VerifyAudit(bytes.NewReader(bytes.Join(lines, nil)), auditGateway.PublicKey())
	if err != nil || n != 5 {
		t.Fatalf("VerifyAudit = %d, %v; want 5 good records", n, err)
	}
	var recs []Record
	for _, line := range lines {
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if recs[0].Prev != genesis || recs[0].Seq != 1 || recs[4].Seq != 5 || recs[1].Prev != recs[0].Hash {
		t.Errorf("chain: %+v", recs)
	}
	if recs[0].Time != "2026-01-01T00:00:01Z" || recs[0].Signer != auditGateway.PublicKey() {
		t.Errorf("record 1 time %s signer %s", recs[0].Time, recs[0].Signer)
	}
	if string(recs[1].Evidence) != `{"spaced":[1,2]}` {
		t.Errorf("JSON evidence = %s, want it compacted", recs[1].Evidence)
	}
	if string(recs[2].Evidence) != `"token=abc\u0026user_id=U1"` && string(recs[2].Evidence) != `"token=abc&user_id=U1"` {
		t.Errorf("non-JSON evidence = %s, want it kept as a string", recs[2].Evidence)
	}
	if !bytes.Equal(recs[0].Evidence, ntJSON(ntEvent(nil))) {
		t.Errorf("request evidence is not the signed event")
	}
	if recs[4].Evidence != nil {
		t.Errorf("record without evidence has %s", recs[4].Evidence)
	}

	// Reopening continues the chain.
	l, err := OpenAudit(path, auditGateway)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := l.Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r2", Data: 1}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := VerifyAudit(f, auditGateway.PublicKey()); err != nil || n != 7 {
		t.Errorf("after reopening: VerifyAudit = %d, %v; want 7", n, err)
	}
}

// edit returns lines with line i (1-based) changed by f.
func editRecord(t *testing.T, lines [][]byte, i int, f func(*Record)) [][]byte {
	t.Helper()
	var r Record
	if err := json.Unmarshal(lines[i-1], &r); err != nil {
		t.Fatal(err)
	}
	f(&r)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	out := append([][]byte(nil), lines...)
	out[i-1] = append(b, '\n')
	return out
}

// resign makes r a well-formed record signed by k.
func resign(r *Record, k *Key) {
	r.Signer = k.PublicKey()
	d, _ := r.digest()
	sk, _ := hex.DecodeString(k.secret)
	priv, _ := btcec.PrivKeyFromBytes(sk)
	sig, _ := schnorr.Sign(priv, d[:])
	r.Hash, r.Sig = hex.EncodeToString(d[:]), hex.EncodeToString(sig.Serialize())
}

func TestAuditTamper(t *testing.T) {
	_, lines := writeAuditLog(t)
	mallory := ntMallory
	var last Record
	json.Unmarshal(lines[4], &last)
	forgedTail := Record{Seq: 6, Time: "2026-01-01T00:00:09Z", Type: "decision", RequestID: "r1", Data: json.RawMessage(`{"status":"denied"}`), Prev: last.Hash}
	resign(&forgedTail, mallory)
	forgedTailLine, _ := json.Marshal(forgedTail)

	tests := []struct {
		name   string
		lines  [][]byte
		signer string
		line   int
		seq    uint64
		reason string
	}{
		{name: "edited data", lines: editRecord(t, lines, 3, func(r *Record) { r.Data = json.RawMessage(`{"vote":"approve","result":"counted"}`) }), line: 3, seq: 3, reason: "hash does not match"},
		{name: "edited evidence", lines: editRecord(t, lines, 1, func(r *Record) { r.Evidence = json.RawMessage(`{}`) }), line: 1, seq: 1, reason: "hash does not match"},
		{name: "evidence removed", lines: editRecord(t, lines, 2, func(r *Record) { r.Evidence = nil }), line: 2, seq: 2, reason: "hash does not match"},
		{name: "edited type", lines: editRecord(t, lines, 4, func(r *Record) { r.Type = "vote" }), line: 4, seq: 4, reason: "hash does not match"},
		{name: "edited time", lines: editRecord(t, lines, 5, func(r *Record) { r.Time = "2025-01-01T00:00:00Z" }), line: 5, seq: 5, reason: "hash does not match"},
		{name: "edited hash", lines: editRecord(t, lines, 2, func(r *Record) { r.Hash = strings.Repeat("0", 64) }), line: 2, seq: 2, reason: "hash does not match"},
		{name: "edited prev", lines: editRecord(t, lines, 2, func(r *Record) { r.Prev = genesis }), line: 2, seq: 2, reason: "prev hash"},
		{name: "renumbered", lines: editRecord(t, lines, 3, func(r *Record) { r.Seq = 4 }), line: 3, seq: 4, reason: "sequence number 4, want 3"},
		{name: "deleted line", lines: append(append([][]byte{}, lines[:2]...), lines[3:]...), line: 3, seq: 4, reason: "sequence number 4, want 3"},
		{name: "deleted first line", lines: lines[1:], line: 1, seq: 2, reason: "sequence number 2, want 1"},
		{name: "reordered", lines: [][]byte{lines[0], lines[2], lines[1], lines[3], lines[4]}, line: 2, seq: 3, reason: "sequence number 3, want 2"},
		{name: "expected another signer", lines: lines, signer: mallory.PublicKey(), line: 1, seq: 1, reason: "signed by"},
		{name: "appended by another key", lines: append(append([][]byte{}, lines...), append(forgedTailLine, '\n')), signer: auditGateway.PublicKey(), line: 6, seq: 6, reason: "signed by"},
		{name: "re-signed by another key", lines: editRecord(t, lines, 4, func(r *Record) { r.Data = json.RawMessage(`{"status":"denied"}`); resign(r, mallory) }), line: 4, seq: 4, reason: "signed by"},
		{name: "re-signed by another key, signer given", lines: editRecord(t, lines, 4, func(r *Record) { resign(r, mallory) }), signer: auditGateway.PublicKey(), line: 4, seq: 4, reason: "signed by"},
		{name: "signer field swapped", lines: editRecord(t, lines, 2, func(r *Record) {
			r.Signer = mallory.PublicKey()
			d, _ := r.digest()
			r.Hash = hex.EncodeToString(d[:])
		}), line: 2, seq: 2, reason: "signed by"},
		{name: "signature by another key over the same hash", lines: editRecord(t, lines, 4, func(r *Record) {
			sk, _ := hex.DecodeString(mallory.secret)
			priv, _ := btcec.PrivKeyFromBytes(sk)
			h, _ := hex.DecodeString(r.Hash)
			sig, _ := schnorr.Sign(priv, h)
			r.Sig = hex.EncodeToString(sig.Serialize())
		}), line: 4, seq: 4, reason: "signature does not verify"},
		{name: "signature not hex", lines: editRecord(t, lines, 1, func(r *Record) { r.Sig = "zz" }), line: 1, seq: 1, reason: "signature is not hex"},
		{name: "signer not a key", lines: editRecord(t, lines, 1, func(r *Record) { r.Signer = "abcd" }), line: 1, seq: 1, reason: "hash does not match"},
		{name: "truncated last line", lines: append(append([][]byte{}, lines[:4]...), lines[4][:len(lines[4])/2]), line: 5, seq: 5, reason: "not a JSON record"},
		{name: "empty line", lines: [][]byte{lines[0], lines[1], []byte("\n"), lines[2]}, line: 3, seq: 3, reason: "empty line"},
		{name: "garbage line", lines: [][]byte{lines[0], []byte("hello\n"), lines[1]}, line: 2, seq: 2, reason: "not a JSON record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := VerifyAudit(bytes.NewReader(bytes.Join(tt.lines, nil)), tt.signer)
			var ce *ChainError
			if !errors.As(err, &ce) {
				t.Fatalf("VerifyAudit = %d, %v; want a *ChainError", n, err)
			}
			if ce.Line != tt.line || ce.Seq != tt.seq || !strings.Contains(ce.Reason, tt.reason) {
				t.Errorf("break at line %d (seq %d): %q; want line %d (seq %d) mentioning %q", ce.Line, ce.Seq, ce.Reason, tt.line, tt.seq, tt.reason)
			}
			if n != tt.line-1 {
				t.Errorf("%d good records before the break, want %d", n, tt.line-1)
			}
		})
	}
	// Without a signer given, the first record's key is held to: a tail
	// appended by another key that chains correctly is still a break.
	_, err := VerifyAudit(bytes.NewReader(bytes.Join(append(append([][]byte{}, lines...), append(forgedTailLine, '\n')), nil)), "")
	if ce, ok := err.(*ChainError); !ok || ce.Line != 6 || !strings.Contains(ce.Reason, "signed by") {
		t.Errorf("well-chained tail by another key, no signer: %v, want a break at line 6", err)
	}
}

// TestAuditTornLine: after a crash mid-write the log reopens, the torn
// record is reported, and what is appended next is whole on its own line.
func TestAuditTornLine(t *testing.T) {
	path, lines := writeAuditLog(t)
	torn := bytes.Join(append(append([][]byte{}, lines[:4]...), lines[4][:40]), nil)
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := OpenAudit(path, auditGateway)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r1", Data: "after the crash"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	b, _ := os.ReadFile(path)
	_, err = VerifyAudit(bytes.NewReader(b), auditGateway.PublicKey())
	var ce *ChainError
	if !errors.As(err, &ce) || ce.Line != 5 {
		t.Fatalf("VerifyAudit: %v; want a break at line 5", err)
	}
	got := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if len(got) != 6 {
		t.Fatalf("%d lines, want 6 (the torn one, then the new record)", len(got))
	}
	var r Record
	if err := json.Unmarshal(got[5], &r); err != nil || r.Seq != 5 || string(r.Data) != `"after the crash"` {
		t.Errorf("new record = %s (%v), want seq 5 continuing from record 4", got[5], err)
	}
}

func TestAuditConcurrentAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := OpenAudit(path, auditGateway)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		mirrored int
	)
	l.Mirror = func(ctx context.Context, line []byte) error {
		mu.Lock()
		defer mu.Unlock()
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Errorf("mirrored a line that is not a record: %q", line)
		}
		mirrored++
		return nil
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if err := l.Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r", Data: i}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	l.Close()
	f, _ := os.Open(path)
	defer f.Close()
	if n, err := VerifyAudit(f, auditGateway.PublicKey()); err != nil || n != 50 {
		t.Errorf("VerifyAudit = %d, %v; want 50", n, err)
	}
	if mirrored != 50 {
		t.Errorf("mirrored %d, want 50", mirrored)
	}
}

func TestAuditDigestIsStable(t *testing.T) {
	// The digest is the audit format: a change here breaks every log
	// already written.
	r := Record{Seq: 1, Time: "2026-01-01T00:00:00Z", Type: "request", RequestID: "r1", Data: json.RawMessage(`{"a":1}`), Prev: genesis, Signer: strings.Repeat("ab", 32)}
	d, err := r.digest()
	if err != nil {
		t.Fatal(err)
	}
	pre := `["signoff-audit-v1",1,"2026-01-01T00:00:00Z","request","r1",{"a":1},null,"` + genesis + `","` + strings.Repeat("ab", 32) + `"]`
	if want := sha256.Sum256([]byte(pre)); d != want {
		t.Errorf("digest = %x, want sha256(%s) = %x", d, pre, want)
	}
}

// TestAuditMirrorKeepsChainOrder: under concurrent appends the mirror (the
// Redis stream other replicas read) receives the records in chain order,
// and they are the lines written to the file.
func TestAuditMirrorKeepsChainOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := OpenAudit(path, auditGateway)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var (
		mu       sync.Mutex
		mirrored []string
	)
	l.Mirror = func(_ context.Context, line []byte) error {
		mu.Lock()
		defer mu.Unlock()
		mirrored = append(mirrored, string(line))
		return nil
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Append(context.Background(), bot.AuditEntry{Type: "vote", RequestID: "r", Data: i}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	file, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(file)), "\n")
	if len(mirrored) != 50 || strings.Join(mirrored, "\n") != strings.Join(lines, "\n") {
		t.Fatalf("mirror got %d records, not the file's %d in the same order", len(mirrored), len(lines))
	}
	if n, err := VerifyAudit(strings.NewReader(string(file)), ""); err != nil || n != 50 {
		t.Fatalf("verify: %d, %v", n, err)
	}
}
