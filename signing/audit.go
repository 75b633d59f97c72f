package signing

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"

	"github.com/signoff/signoff/bot"
)

// Record is one line of the audit log. Each record's Hash covers its
// fields and the previous record's hash, and Sig is the gateway key's
// BIP-340 signature of Hash, so removing, reordering or editing a record
// breaks the chain at that point.
type Record struct {
	Seq       uint64          `json:"seq"`
	Time      string          `json:"time"`
	Type      string          `json:"type"`
	RequestID string          `json:"request_id"`
	Data      json.RawMessage `json:"data"`
	Evidence  json.RawMessage `json:"evidence,omitempty"`
	Prev      string          `json:"prev"`
	Signer    string          `json:"signer"`
	Hash      string          `json:"hash"`
	Sig       string          `json:"sig"`
}

// genesis is the Prev of the first record.
var genesis = hex.EncodeToString(make([]byte, 32))

func (r *Record) digest() ([32]byte, error) {
	data, evidence := r.Data, r.Evidence
	if len(evidence) == 0 {
		evidence = json.RawMessage("null")
	}
	pre, err := json.Marshal([]any{"signoff-audit-v1", r.Seq, r.Time, r.Type, r.RequestID, data, evidence, r.Prev, r.Signer})
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(pre), nil
}

// AuditLog appends signed, hash-chained records to a file. Mirror, when
// set, also receives every line (the Redis stream other replicas read).
type AuditLog struct {
	Mirror func(ctx context.Context, line []byte) error
	Now    func() time.Time

	mu   sync.Mutex
	f    *os.File
	key  *Key
	priv *btcec.PrivateKey
	seq  uint64
	prev string
}

// OpenAudit opens (or creates) the log at path and continues its chain.
func OpenAudit(path string, key *Key) (*AuditLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create audit dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	l := &AuditLog{f: f, key: key, prev: genesis}
	sk, err := hex.DecodeString(key.secret)
	if err != nil {
		f.Close()
		return nil, err
	}
	l.priv, _ = btcec.PrivKeyFromBytes(sk)
	// Continue from the last record; a torn last line (a crash mid-write)
	// is a break that `audit verify` reports.
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Hash != "" {
			l.seq, l.prev = r.Seq, r.Hash
		}
	}
	if err := sc.Err(); err != nil {
		f.Close()
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	// After a torn write the file does not end in a newline; start the
	// next record on a line of its own, or it would be lost in the torn one.
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
			if _, err := f.Write([]byte("\n")); err != nil {
				f.Close()
				return nil, fmt.Errorf("audit write: %w", err)
			}
		}
	}
	return l, nil
}

// Append writes one record for e.
func (l *AuditLog) Append(ctx context.Context, e bot.AuditEntry) error {
	data, err := json.Marshal(e.Data)
	if err != nil {
		return fmt.Errorf("audit data: %w", err)
	}
	var evidence json.RawMessage
	if len(e.Evidence) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, e.Evidence); err != nil {
			// Evidence that is not JSON is kept as a string.
			evidence, _ = json.Marshal(string(e.Evidence))
		} else {
			evidence = buf.Bytes()
		}
	}
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	r := Record{
		Seq: l.seq + 1, Time: now().UTC().Format(time.RFC3339Nano), Type: e.Type, RequestID: e.RequestID,
		Data: data, Evidence: evidence, Prev: l.prev, Signer: l.key.PublicKey(),
	}
	d, err := r.digest()
	if err != nil {
		return fmt.Errorf("audit digest: %w", err)
	}
	sig, err := schnorr.Sign(l.priv, d[:])
	if err != nil {
		return fmt.Errorf("audit sign: %w", err)
	}
	r.Hash, r.Sig = hex.EncodeToString(d[:]), hex.EncodeToString(sig.Serialize())
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("audit write: %w", err)
	}
	l.seq, l.prev = r.Seq, r.Hash
	if l.Mirror != nil {
		// Under the lock, so the stream holds the records in chain order;
		// bounded, so a slow store cannot stall the log for long.
		mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := l.Mirror(mctx, line); err != nil {
			return fmt.Errorf("audit mirror: %w", err)
		}
	}
	return nil
}

// Close closes the file.
func (l *AuditLog) Close() error { return l.f.Close() }

// ChainError says where an audit log breaks.
type ChainError struct {
	Line   int
	Seq    uint64
	Reason string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("line %d (seq %d): %s", e.Line, e.Seq, e.Reason)
}

// VerifyAudit checks every record read from r: well-formed, numbered in
// order, chained to the one before, hash recomputed, signature valid, and
// every record signed by signer — or, when signer is empty, by the key that
// signed the first record, so a tail appended under another key is a
// break. It returns the number of good records and the first break as a
// *ChainError.
func VerifyAudit(r io.Reader, signer string) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	prev, seq, n := genesis, uint64(0), 0
	for line := 1; sc.Scan(); line++ {
		fail := func(s uint64, format string, args ...any) (int, error) {
			return n, &ChainError{Line: line, Seq: s, Reason: fmt.Sprintf(format, args...)}
		}
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			return fail(seq+1, "empty line")
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return fail(seq+1, "not a JSON record: %v", err)
		}
		if rec.Seq != seq+1 {
			return fail(rec.Seq, "sequence number %d, want %d (a record is missing or out of order)", rec.Seq, seq+1)
		}
		if rec.Prev != prev {
			return fail(rec.Seq, "prev hash does not match the record before")
		}
		if signer == "" {
			signer = rec.Signer
		}
		if rec.Signer != signer {
			return fail(rec.Seq, "signed by %s, want %s", rec.Signer, signer)
		}
		d, err := rec.digest()
		if err != nil {
			return fail(rec.Seq, "cannot hash: %v", err)
		}
		if hex.EncodeToString(d[:]) != rec.Hash {
			return fail(rec.Seq, "hash does not match the record's contents (edited)")
		}
		if err := verifySchnorr(rec.Signer, d[:], rec.Sig); err != nil {
			return fail(rec.Seq, "%v", err)
		}
		prev, seq = rec.Hash, rec.Seq
		n++
	}
	if err := sc.Err(); err != nil {
		return n, &ChainError{Line: n + 1, Seq: seq + 1, Reason: err.Error()}
	}
	return n, nil
}

func verifySchnorr(pubHex string, msg []byte, sigHex string) error {
	pb, err := hex.DecodeString(pubHex)
	if err != nil || len(pb) != 32 {
		return errors.New("signer is not a 32-byte hex public key")
	}
	pub, err := schnorr.ParsePubKey(pb)
	if err != nil {
		return errors.New("signer is not a valid public key")
	}
	sb, err := hex.DecodeString(sigHex)
	if err != nil {
		return errors.New("signature is not hex")
	}
	sig, err := schnorr.ParseSignature(sb)
	if err != nil {
		return errors.New("signature is malformed")
	}
	if !sig.Verify(msg, pub) {
		return errors.New("signature does not verify")
	}
	return nil
}
