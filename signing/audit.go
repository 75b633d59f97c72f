package signing

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/signoff/signoff/bot"
)

// Record is one line of the audit trail. Each record's Hash covers its
// fields and the previous record's hash, so removing, reordering or editing
// a record breaks the chain at that point. Records are not signed one by
// one: every so often the gateway appends a checkpoint record, whose Sig is
// its key's BIP-340 signature of the checkpoint's Hash — and so, through the
// links, of every record before it (as Certificate Transparency signs tree
// heads). Records written by signoff before checkpoints existed (format v1)
// carry a signature each and still verify.
type Record struct {
	Seq       uint64          `json:"seq"`
	Time      string          `json:"time"`
	Type      string          `json:"type"`
	RequestID string          `json:"request_id"`
	Data      json.RawMessage `json:"data"`
	Evidence  json.RawMessage `json:"evidence,omitempty"`
	Prev      string          `json:"prev"`
	Signer    string          `json:"signer,omitempty"`
	Hash      string          `json:"hash"`
	Sig       string          `json:"sig,omitempty"`

	// canonical: Data and Evidence are as encoding/json writes a
	// json.RawMessage (newRecord made them), so line and preimage append
	// them as they are (audit_encode.go).
	canonical bool
}

// TypeCheckpoint is the type of a signed checkpoint record.
const TypeCheckpoint = "checkpoint"

// genesis is the Prev of the first record.
var genesis = hex.EncodeToString(make([]byte, 32))

// v1 reports whether r is a record of the first format: signed on its own.
func (r *Record) v1() bool { return r.Sig != "" && r.Type != TypeCheckpoint }

func (r *Record) digest() ([32]byte, error) {
	version := "signoff-audit-v2"
	if r.v1() {
		version = "signoff-audit-v1"
	}
	pre, err := r.preimage(version)
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(pre), nil
}

// ChainStore holds the one chain every replica appends to, in one order
// (quorum/redis implements it on a stream). A replica's file is a copy.
type ChainStore interface {
	// AuditHead is the last record's seq and hash (0, "" when empty).
	AuditHead(ctx context.Context) (seq uint64, hash string, err error)
	// AppendAudit stores line as record seq (hash, linked to prev) only if
	// the head is still seq-1 with hash prev; otherwise ok is false.
	AppendAudit(ctx context.Context, seq uint64, prev, hash string, line []byte) (ok bool, err error)
	// AuditRecords returns up to max records after seq, in order.
	AuditRecords(ctx context.Context, after uint64, max int) ([][]byte, error)
	// SeedAudit sets an empty store's head (the records before it stay in
	// the files); false when the store already has a head.
	SeedAudit(ctx context.Context, seq uint64, hash string) (bool, error)
}

// AuditOptions tune an AuditLog; the zero value is a file-only log.
type AuditOptions struct {
	// Store, when set, is the shared chain; records go there first.
	Store ChainStore
	// CheckpointEvery signs the head after this many records (default 1000).
	CheckpointEvery int
	// CheckpointInterval signs the head when records have waited this long
	// for one (default 1s).
	CheckpointInterval time.Duration
	// StoreHoldsAll gives a store that lost its chain (restarted empty)
	// every record of the file back, so exports and replicas that join
	// later find the whole chain there; otherwise (the embedded store,
	// empty at every start) it is seeded with the head alone.
	StoreHoldsAll bool
	// Warn is told what opening had to repair (a quarantined tail).
	Warn func(msg string)
	// NoBatch commits each record on its own under the chain's lock even
	// when the store could group-commit (to compare the two).
	NoBatch bool
	// OnCheckpoint is told each checkpoint this log signs (its line), with
	// the log's lock held: it must not block (Witnesses.Checkpointed).
	OnCheckpoint func(line []byte)
}

// AuditLog appends hash-chained records to a file (and to the shared
// store, when there is one) and signs checkpoints of the head. Append
// fails when the record could not be written, so a caller can refuse what
// it would have recorded.
type AuditLog struct {
	Now func() time.Time

	mu        sync.Mutex
	path      string
	f         *os.File
	key       *Key
	opt       AuditOptions
	seq       uint64 // the last record in the chain as this log knows it
	prev      string
	fileSeq   uint64 // the last record written to the file
	fileHash  string
	covered   uint64 // the last checkpoint's seq
	oldest    time.Time
	torn      bool  // the file may end inside a record
	size      int64 // the file's length
	broken    error // a line could not be taken back: refuse all
	rejoining bool
	types     map[string]bool // record types the chain held (for Holds)

	batcher bot.AuditBatcher // set when the store can group-commit
	qmu     sync.Mutex       // guards queue and leading (taken after mu)
	queue   []*queued        // records waiting for the next batch
	leading bool             // a batch is being led
	stats   auditStats

	stop chan struct{}
	done chan struct{}
}

// OpenAudit opens (or creates) a file-only log at path.
func OpenAudit(path string, key *Key) (*AuditLog, error) {
	return OpenAuditWith(context.Background(), path, key, AuditOptions{})
}

// OpenAuditWith opens the log at path and continues its chain — but only
// from a point the gateway can vouch for: the whole file is verified under
// key, and records after its last signed checkpoint (written before a
// crash, never signed, and so forgeable by anyone who can write the file)
// are moved aside to path.unverified-* unless the store holds the same
// chain. A file that does not verify stops the gateway.
func OpenAuditWith(ctx context.Context, path string, key *Key, opt AuditOptions) (*AuditLog, error) {
	if opt.CheckpointEvery <= 0 {
		opt.CheckpointEvery = 1000
	}
	if opt.CheckpointInterval <= 0 {
		opt.CheckpointInterval = time.Second
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create audit dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	l := &AuditLog{path: path, f: f, key: key, opt: opt, prev: genesis}
	if b, ok := opt.Store.(bot.AuditBatcher); ok && b.CanBatchAudit() && !opt.NoBatch {
		l.batcher = b
	}
	if err := l.recover(ctx); err != nil {
		f.Close()
		return nil, err
	}
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go l.checkpointer()
	return l, nil
}

// recover verifies the file and brings it and the store to one trusted head.
func (l *AuditLog) recover(ctx context.Context) error {
	if _, err := l.f.Seek(0, 0); err != nil {
		return fmt.Errorf("read audit log: %w", err)
	}
	rep := VerifyChain(l.f, VerifyOptions{Signer: l.key.PublicKey()})
	if rep.Err != nil {
		return fmt.Errorf("read audit log: %w", rep.Err)
	}
	if rep.Break != nil {
		return fmt.Errorf("audit log %s does not verify under this gateway's key (%v); a gateway never continues a chain it cannot vouch for: "+
			"keep that file as evidence, move it aside and start again (see `signoff audit verify %s`)", l.path, rep.Break, l.path)
	}
	l.seq, l.prev, l.covered = rep.Last, rep.Head, rep.Covered
	l.types = rep.Types
	var storeSeq uint64
	if l.opt.Store != nil {
		var err error
		if storeSeq, _, err = l.opt.Store.AuditHead(ctx); err != nil {
			return fmt.Errorf("audit store: %w", err)
		}
	}
	vouched := rep.Last == rep.Covered
	if !vouched && storeSeq >= rep.Last && rep.Last > 0 {
		h, err := l.storeHash(ctx, rep.Last)
		if err != nil {
			return err
		}
		vouched = h == rep.Head
	}
	if !vouched {
		// Continue from the last checkpoint; what follows it is kept aside.
		l.seq, l.prev = rep.Covered, rep.CoveredHash
		if err := l.quarantine(rep.CoveredEnd); err != nil {
			return err
		}
	} else if rep.TornTail {
		l.torn = true
	}
	l.fileSeq, l.fileHash = l.seq, l.prev
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	l.size = fi.Size()
	if l.opt.Store == nil {
		return nil
	}
	switch {
	case storeSeq == 0 && l.seq > 0 && !l.opt.StoreHoldsAll:
		if _, err := l.opt.Store.SeedAudit(ctx, l.seq, l.prev); err != nil {
			return fmt.Errorf("audit store: %w", err)
		}
	case storeSeq < l.seq:
		// The store lost records this file has (restored from an older
		// snapshot): give them back, from the file's verified part.
		if h, err := l.storeHash(ctx, storeSeq); err != nil {
			return err
		} else if h != "" && h != fileHashAt(l.path, storeSeq) {
			return fmt.Errorf("audit log %s and the store's chain differ at seq %d; refusing to join them", l.path, storeSeq)
		}
		if err := l.pushFrom(ctx, storeSeq); err != nil {
			return err
		}
	default:
		if l.seq > 0 {
			h, err := l.storeHash(ctx, l.seq)
			if err != nil {
				return err
			}
			if h != "" && h != l.prev {
				return l.rejoin(ctx, l.seq)
			}
		}
		if err := l.catchUp(ctx); err != nil {
			return err
		}
	}
	return nil
}

// storeHash is the hash of the store's record seq ("" if it has none).
func (l *AuditLog) storeHash(ctx context.Context, seq uint64) (string, error) {
	if seq == 0 {
		return "", nil
	}
	lines, err := l.opt.Store.AuditRecords(ctx, seq-1, 1)
	if err != nil {
		return "", fmt.Errorf("audit store: %w", err)
	}
	if len(lines) == 0 {
		return "", nil
	}
	var r Record
	if err := json.Unmarshal(lines[0], &r); err != nil || r.Seq != seq {
		return "", fmt.Errorf("audit store: record %d is not readable", seq)
	}
	return r.Hash, nil
}

// fileHashAt is the hash of the file's record seq ("" if none).
func fileHashAt(path string, seq uint64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := ""
	eachLine(f, func(_ int, line []byte, _ int64) bool {
		var r Record
		if json.Unmarshal(line, &r) == nil && r.Seq == seq {
			h = r.Hash
			return false
		}
		return true
	})
	return h
}

// pushFrom appends the file's records after seq to the store.
func (l *AuditLog) pushFrom(ctx context.Context, after uint64) error {
	f, err := os.Open(l.path)
	if err != nil {
		return fmt.Errorf("read audit log: %w", err)
	}
	defer f.Close()
	var perr error
	eachLine(f, func(_ int, line []byte, _ int64) bool {
		var r Record
		if json.Unmarshal(line, &r) != nil || r.Seq <= after || r.Seq > l.seq {
			return true
		}
		ok, err := l.opt.Store.AppendAudit(ctx, r.Seq, r.Prev, r.Hash, bytes.TrimSpace(line))
		if err == nil && !ok {
			if h, herr := l.storeHash(ctx, r.Seq); herr == nil && h == r.Hash {
				return true // another replica restored the same record
			}
			// Another replica restored its chain, or appended, meanwhile:
			// the caller catches up on the new head and tries again.
			err = fmt.Errorf("%w: the store's head moved while seq %d was restored", bot.ErrAuditConflict, r.Seq)
		}
		perr = err
		return err == nil
	})
	if perr != nil {
		return fmt.Errorf("audit store: %w", perr)
	}
	return nil
}

// quarantine moves the file's bytes after end to a side file and cuts the
// log there.
func (l *AuditLog) quarantine(end int64) error {
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if fi.Size() <= end {
		return nil
	}
	tail := make([]byte, fi.Size()-end)
	if _, err := l.f.ReadAt(tail, end); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	side := fmt.Sprintf("%s.unverified-%d", l.path, time.Now().UnixNano())
	if err := os.WriteFile(side, tail, 0o600); err != nil {
		return fmt.Errorf("audit log: keep unverified tail: %w", err)
	}
	if err := l.f.Truncate(end); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if l.opt.Warn != nil {
		l.opt.Warn(fmt.Sprintf("audit log: %d byte(s) after the last signed checkpoint (seq %d) could not be vouched for (written before a crash, or by someone else) and were moved to %s; the chain continues from the checkpoint",
			len(tail), l.covered, side))
	}
	return nil
}

// Append writes one record for e: to the file, then to the store (when
// there is one; in a batch with others when it can). An error means the
// record is not written.
func (l *AuditLog) Append(ctx context.Context, e bot.AuditEntry) error {
	if l.batcher == nil {
		return l.AppendCommit(ctx, e, nil)
	}
	c := &bot.AuditCommit{}
	if err := l.AppendBatched(ctx, e, c); err != nil {
		return err
	}
	if c.Err != nil || !c.InChain {
		return fmt.Errorf("audit store: %w", cmp.Or(c.Err, bot.ErrAuditConflict))
	}
	return nil
}

func newRecord(e bot.AuditEntry) (Record, error) {
	data, err := json.Marshal(e.Data)
	if err != nil {
		return Record{}, fmt.Errorf("audit data: %w", err)
	}
	var evidence json.RawMessage
	if len(e.Evidence) > 0 {
		var ok bool
		if evidence, ok = canonicalJSON(e.Evidence); !ok {
			// Evidence that is not JSON is kept as a string.
			evidence, _ = json.Marshal(string(e.Evidence))
		}
	}
	return Record{Type: e.Type, RequestID: e.RequestID, Data: data, Evidence: evidence, canonical: true}, nil
}

func (l *AuditLog) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// AppendCommit writes the record for e ahead of commit, which does the
// recorded work (and, when the chain is shared, appends the record to the
// store in the same atomic step). A failed commit, or one that says the
// record is not part of the chain, takes the line back out of the file.
func (l *AuditLog) AppendCommit(ctx context.Context, e bot.AuditEntry, commit func(context.Context, bot.AuditRef) (bool, error)) error {
	r, err := newRecord(e)
	if err != nil {
		return err
	}
	t0 := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stats.waited(time.Since(t0))
	if _, err := l.append(ctx, r, "", commit); err != nil {
		return err
	}
	// The record is written; a checkpoint that fails now is tried again
	// with the next record or tick.
	if l.seq-l.covered >= uint64(l.opt.CheckpointEvery) {
		l.checkpoint(ctx, "count")
	}
	return nil
}

// append chains r after the head, writes it to the file, then commits it
// (to the store, or through commit); l.mu is held.
func (l *AuditLog) append(ctx context.Context, r Record, reason string, commit func(context.Context, bot.AuditRef) (bool, error)) (bool, error) {
	if l.broken != nil {
		return false, fmt.Errorf("audit log unusable until restart: %w", l.broken)
	}
	if l.fileSeq < l.seq {
		if err := l.catchUp(ctx); err != nil && !errors.Is(err, bot.ErrAuditConflict) {
			return false, err
		}
	}
	r.Time = l.now().UTC().Format(time.RFC3339Nano)
	for attempt := 0; ; attempt++ {
		r.Seq, r.Prev = l.seq+1, l.prev
		if r.Type == TypeCheckpoint {
			r.Signer = l.key.PublicKey()
			r.Data, _ = json.Marshal(map[string]any{"covers": l.seq, "reason": reason})
		}
		d, err := r.digest()
		if err != nil {
			return false, fmt.Errorf("audit digest: %w", err)
		}
		r.Hash = hex.EncodeToString(d[:])
		if r.Type == TypeCheckpoint {
			sig, err := l.key.signDigest(&d)
			if err != nil {
				return false, fmt.Errorf("audit sign: %w", err)
			}
			r.Sig = hex.EncodeToString(sig[:])
		}
		line, err := r.line()
		if err != nil {
			return false, err
		}
		off := l.size
		if err := l.write(line); err != nil {
			return false, err
		}
		ref := bot.AuditRef{Seq: r.Seq, Prev: r.Prev, Hash: r.Hash, Line: line, Shared: l.opt.Store != nil}
		appended := true
		t0 := time.Now()
		switch {
		case commit != nil:
			appended, err = commit(ctx, ref)
		case l.opt.Store != nil:
			var ok bool
			ok, err = l.opt.Store.AppendAudit(ctx, r.Seq, r.Prev, r.Hash, line)
			if err == nil && !ok {
				err = bot.ErrAuditConflict
			}
			if err != nil && !errors.Is(err, bot.ErrAuditConflict) {
				err = fmt.Errorf("audit store: %w", err)
			}
		}
		if r.Type != TypeCheckpoint {
			l.stats.committed(time.Since(t0))
		}
		if err != nil || !appended {
			if rerr := l.rollback(off); rerr != nil {
				return false, rerr
			}
		}
		if errors.Is(err, bot.ErrAuditConflict) {
			// Another replica appended: copy its records, then retry.
			if attempt == 50 {
				return false, errors.New("audit store: the chain's head kept moving")
			}
			if err := l.catchUp(ctx); err != nil && !errors.Is(err, bot.ErrAuditConflict) {
				return false, err
			}
			continue
		}
		if err != nil || !appended {
			return false, err
		}
		l.seq, l.prev, l.fileSeq, l.fileHash = r.Seq, r.Hash, r.Seq, r.Hash
		if !l.types[r.Type] {
			l.types[r.Type] = true
		}
		if r.Type == TypeCheckpoint {
			l.covered, l.oldest = r.Seq, time.Time{}
			l.publish(line)
		} else if l.oldest.IsZero() {
			l.oldest = time.Now()
		}
		return true, nil
	}
}

// rollback cuts the file back to off (a line written ahead of a commit
// that did not happen); if even that fails the log refuses every further
// record, since the file would hold one that is not in the chain.
func (l *AuditLog) rollback(off int64) error {
	if err := l.f.Truncate(off); err != nil {
		l.broken = err
		return fmt.Errorf("audit write: cannot take back a record: %w", err)
	}
	l.size = off
	return nil
}

// write appends one line to the file; a partial write is taken back.
func (l *AuditLog) write(line []byte) error {
	buf := make([]byte, 0, len(line)+2)
	if l.torn {
		buf = append(buf, '\n') // start on a line of its own after a tear
	}
	buf = append(append(buf, line...), '\n')
	n, err := l.f.Write(buf)
	if err != nil {
		if n > 0 {
			if rerr := l.rollback(l.size); rerr != nil {
				l.torn = true
			}
		}
		return fmt.Errorf("audit write: %w", err)
	}
	l.size += int64(n)
	l.torn = false
	return nil
}

// catchUp copies the store's records after the file's last one into the
// file, checking that each links to the one before; l.mu is held.
func (l *AuditLog) catchUp(ctx context.Context) error {
	if l.opt.Store == nil {
		return nil
	}
	hs, hh, err := l.opt.Store.AuditHead(ctx)
	if err != nil {
		return fmt.Errorf("audit store: %w", err)
	}
	if hs < l.fileSeq {
		// The store lost records this file has (it restarted empty, or
		// from an older snapshot): give the chain back to it.
		if hs > 0 && hh != fileHashAt(l.path, hs) {
			return l.rejoin(ctx, hs)
		}
		if hs == 0 && !l.opt.StoreHoldsAll {
			if _, err := l.opt.Store.SeedAudit(ctx, l.fileSeq, l.fileHash); err != nil {
				return fmt.Errorf("audit store: %w", err)
			}
			if l.opt.Warn != nil {
				l.opt.Warn(fmt.Sprintf("audit: the store's chain is gone (it restarted empty?); it continues from this replica's head, seq %d (the records before it are in the replicas' files)", l.fileSeq))
			}
		} else if err := l.pushFrom(ctx, hs); err != nil {
			return err
		}
		return nil
	}
	seq, prev := l.fileSeq, l.fileHash
	for {
		lines, err := l.opt.Store.AuditRecords(ctx, seq, 500)
		if err != nil {
			return fmt.Errorf("audit store: %w", err)
		}
		for _, line := range lines {
			var r Record
			if err := json.Unmarshal(line, &r); err != nil {
				return fmt.Errorf("audit store: record after seq %d is not readable", seq)
			}
			d, err := r.digest()
			if err == nil && r.Seq == seq+1 && r.Prev != prev && seq == l.fileSeq && !l.rejoining {
				// The store's chain went another way after this file's
				// head (it restarted empty and another replica refilled it).
				return l.rejoin(ctx, min(seq, hs))
			}
			if err != nil || r.Seq != seq+1 || r.Prev != prev || hex.EncodeToString(d[:]) != r.Hash {
				return fmt.Errorf("audit store: record %d does not link to the chain", seq+1)
			}
			if err := l.write(line); err != nil {
				return err
			}
			seq, prev = r.Seq, r.Hash
			l.fileSeq, l.fileHash, l.seq, l.prev = seq, prev, seq, prev
			l.types[r.Type] = true
			if r.Type == TypeCheckpoint {
				l.covered = r.Seq
			}
		}
		if len(lines) < 500 {
			return nil
		}
	}
}

// checkpoint appends a signed checkpoint of the head; l.mu is held.
func (l *AuditLog) checkpoint(ctx context.Context, reason string) error {
	_, err := l.append(ctx, Record{Type: TypeCheckpoint}, reason, nil)
	return err
}

// publish writes the latest checkpoint beside the log (path.checkpoint),
// where `audit verify` finds it: a log cut shorter than it is truncated.
func (l *AuditLog) publish(line []byte) {
	tmp := l.path + ".checkpoint.tmp"
	if os.WriteFile(tmp, append(line, '\n'), 0o600) == nil {
		os.Rename(tmp, l.path+".checkpoint")
	}
	if l.opt.OnCheckpoint != nil {
		l.opt.OnCheckpoint(line)
	}
}

// CatchUp copies the store's records this log has not seen into its file.
func (l *AuditLog) CatchUp(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.catchUp(ctx)
}

// HashAt is the hash of the file's record seq ("" when it has none).
func (l *AuditLog) HashAt(seq uint64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fileHashAt(l.path, seq)
}

// Checkpoint signs the head now if any record is not yet covered.
func (l *AuditLog) Checkpoint(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seq == l.covered {
		return nil
	}
	return l.checkpoint(ctx, "interval")
}

func (l *AuditLog) checkpointer() {
	defer close(l.done)
	t := time.NewTicker(l.opt.CheckpointInterval / 2)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			due := !l.oldest.IsZero() && time.Since(l.oldest) >= l.opt.CheckpointInterval && l.seq > l.covered
			if due {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				l.checkpoint(ctx, "interval")
				cancel()
			}
			l.mu.Unlock()
		}
	}
}

// Close signs a last checkpoint (so a clean restart continues at once)
// and closes the file.
func (l *AuditLog) Close() error {
	if l.stop != nil {
		close(l.stop)
		<-l.done
		l.stop = nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if l.seq > l.covered && l.f != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = l.checkpoint(ctx, "shutdown")
		cancel()
	}
	if l.f == nil {
		return err
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// Holds reports whether the chain, as this log has read or written it
// since it opened, holds a record of type typ (a token made: the API is
// closed for good).
func (l *AuditLog) Holds(typ string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.types[typ]
}

// Head is the chain's last record as this log knows it.
func (l *AuditLog) Head() (uint64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, l.prev
}

// rejoin follows the store's chain where it and the file went different
// ways (the store restarted empty and was refilled by a replica that had
// not seen this file's last records): the file keeps the records both
// share, up to seq upto at most, and the rest is moved aside as evidence;
// then the store's records are copied. l.mu is held.
func (l *AuditLog) rejoin(ctx context.Context, upto uint64) error {
	type at struct {
		hash string
		end  int64
	}
	f, err := os.Open(l.path)
	if err != nil {
		return fmt.Errorf("read audit log: %w", err)
	}
	idx := map[uint64]at{}
	eachLine(f, func(_ int, line []byte, end int64) bool {
		var r Record
		if json.Unmarshal(line, &r) == nil && r.Seq > 0 {
			idx[r.Seq] = at{r.Hash, end}
		}
		return true
	})
	f.Close()
	k := upto
	for ; k > 0; k-- {
		h, err := l.storeHash(ctx, k)
		if err != nil {
			return err
		}
		if h != "" && h == idx[k].hash {
			break
		}
		if upto-k > 10000 {
			return fmt.Errorf("audit log %s and the store's chain differ for more than 10000 records; refusing to join them", l.path)
		}
	}
	end := idx[k].end
	if k == 0 {
		end = 0
	}
	l.covered = min(l.covered, k)
	if err := l.quarantine(end); err != nil {
		return err
	}
	hash := genesis
	if k > 0 {
		hash = idx[k].hash
	}
	l.seq, l.prev, l.fileSeq, l.fileHash = k, hash, k, hash
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	l.size, l.torn = fi.Size(), false
	if l.opt.Warn != nil {
		l.opt.Warn(fmt.Sprintf("audit: this replica's log and the store's chain went different ways after seq %d (the store lost records and was refilled by another replica); the records after it were moved aside and the store's chain is followed", k))
	}
	l.rejoining = true
	defer func() { l.rejoining = false }()
	return l.catchUp(ctx)
}
