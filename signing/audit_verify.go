package signing

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ChainError says where an audit log breaks.
type ChainError struct {
	Line   int
	Seq    uint64
	Reason string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("line %d (seq %d): %s", e.Line, e.Seq, e.Reason)
}

// Head is a point the chain must reach: the store's head, or a checkpoint
// published beside the log.
type Head struct {
	Seq    uint64
	Hash   string
	Source string // what it is, for messages
}

// VerifyOptions say what a chain is held to.
type VerifyOptions struct {
	// Signer is the gateway key (hex) every checkpoint must be signed by.
	// Empty: the first signed record's key (a library convenience; the
	// CLI always names the key).
	Signer string
	// Expect are heads the chain must contain (same seq, same hash); a
	// chain that ends before one of them is truncated, and one whose
	// record at a head's seq differs is a fork.
	Expect []Head
	// Export accepts an export's trailer (ExportTrailer) as the last
	// line: the chain must reach the head it names, and heads beyond it
	// are newer than the export, not missing from it.
	Export bool
}

// ExportTrailer is the last line `signoff audit export` writes: the head
// as of the export. It is not a record (nothing signs it); it says where
// the export ends, so a fleet that kept writing since does not make the
// export look cut.
type ExportTrailer struct {
	Export struct {
		Seq  uint64 `json:"seq"`
		Hash string `json:"hash"`
		At   string `json:"at"`
	} `json:"export"`
}

// Missing is an expected head the chain does not reach.
type Missing struct {
	Source  string
	Seq     uint64 // the head's seq
	Records uint64 // how many records the chain lacks to reach it
}

// AuditReport is what VerifyChain found.
type AuditReport struct {
	Records     int    // good records, checkpoints included
	Last        uint64 // seq of the last good record
	Head        string // its hash
	End         int64  // byte offset just after it
	Checkpoints int
	Covered     uint64 // seq of the last valid checkpoint (0: none)
	CoveredHash string
	CoveredEnd  int64
	Uncovered   int // records after the last checkpoint
	Signer      string
	Types       map[string]bool // the record types the chain holds
	Tears       []ChainError    // lines that are not records, skipped
	TornTail    bool            // the input does not end with a newline
	Break       *ChainError     // the first break; nothing after it is trusted
	Truncated   []string        // expected heads the chain does not reach
	Err         error           // reading failed
	Missing     []Missing       // Truncated, as data
	// Fork is the first record that differs from an expected head at its
	// seq; SignedFork says a checkpoint of this chain covers it (two
	// different records at one height, both under the gateway's key).
	Fork       *ChainError
	SignedFork bool
	// Export is the trailer's head (nil: none); Newer are expected heads
	// beyond it (written after the export).
	Export *Head
	Newer  []Head
}

// OK reports a chain with no break and no truncation.
func (r *AuditReport) OK() bool {
	return r.Break == nil && len(r.Truncated) == 0 && r.Fork == nil && r.Err == nil
}

// eachLine calls fn with every line of r (without its newline), its
// 1-based number and the offset just after it, until fn returns false.
// It reports whether the input ended without a final newline.
func eachLine(r io.Reader, fn func(n int, line []byte, end int64) bool) (unterminated bool, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var off int64
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		off += int64(len(line))
		if len(line) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, err
		}
		term := bytes.HasSuffix(line, []byte("\n"))
		if !fn(n, bytes.TrimSuffix(line, []byte("\n")), off) {
			return false, nil
		}
		if !term {
			return true, nil
		}
	}
}

// VerifyChain checks every record read from r: well-formed, numbered in
// order, chained to the one before, hash recomputed, every checkpoint
// signed by opt.Signer. A line that is not a record (a torn write) is
// reported and skipped: the records after it must link to the last good
// one. It stops at the first break.
func VerifyChain(r io.Reader, opt VerifyOptions) *AuditReport {
	rep := &AuditReport{Head: genesis, CoveredHash: genesis, Signer: opt.Signer, Types: map[string]bool{}}
	expect := map[uint64][]Head{}
	for _, h := range opt.Expect {
		expect[h.Seq] = append(expect[h.Seq], h)
	}
	seen := map[uint64]bool{}
	prev, seq := genesis, uint64(0)
	unterminated, err := eachLine(r, func(line int, b []byte, end int64) bool {
		fail := func(s uint64, format string, args ...any) bool {
			rep.Break = &ChainError{Line: line, Seq: s, Reason: fmt.Sprintf(format, args...)}
			return false
		}
		if len(bytes.TrimSpace(b)) == 0 {
			rep.Tears = append(rep.Tears, ChainError{Line: line, Seq: seq + 1, Reason: "empty line"})
			return true
		}
		if rep.Export != nil {
			return fail(seq+1, "a line after the export's trailer")
		}
		if opt.Export && bytes.HasPrefix(bytes.TrimSpace(b), []byte(`{"export":`)) {
			var tr ExportTrailer
			if json.Unmarshal(b, &tr) == nil {
				rep.Export = &Head{Seq: tr.Export.Seq, Hash: tr.Export.Hash, Source: "the export's own head (" + tr.Export.At + ")"}
				return true
			}
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			rep.Tears = append(rep.Tears, ChainError{Line: line, Seq: seq + 1, Reason: fmt.Sprintf("not a JSON record (a torn write?): %v", err)})
			return true
		}
		if rec.Seq != seq+1 {
			return fail(rec.Seq, "sequence number %d, want %d (a record is missing or out of order)", rec.Seq, seq+1)
		}
		if rec.Prev != prev {
			return fail(rec.Seq, "prev hash does not match the record before")
		}
		signed := rec.Type == TypeCheckpoint || rec.v1()
		if !signed && rec.Signer != "" {
			return fail(rec.Seq, "an unsigned record names a signer")
		}
		if signed {
			if rep.Signer == "" {
				rep.Signer = rec.Signer
			}
			if rec.Signer != rep.Signer {
				return fail(rec.Seq, "signed by %s, want %s (another key's chain)", rec.Signer, rep.Signer)
			}
		}
		d, err := rec.digest()
		if err != nil {
			return fail(rec.Seq, "cannot hash: %v", err)
		}
		if hex.EncodeToString(d[:]) != rec.Hash {
			return fail(rec.Seq, "hash does not match the record's contents (edited)")
		}
		if signed {
			if err := verifySchnorr(rec.Signer, d[:], rec.Sig); err != nil {
				return fail(rec.Seq, "%v", err)
			}
			if rec.Type == TypeCheckpoint {
				var cp struct{ Covers uint64 }
				if json.Unmarshal(rec.Data, &cp) != nil || cp.Covers != rec.Seq-1 {
					return fail(rec.Seq, "checkpoint does not say it covers seq %d", rec.Seq-1)
				}
				rep.Checkpoints++
			}
			rep.Covered, rep.CoveredHash, rep.CoveredEnd, rep.Uncovered = rec.Seq, rec.Hash, end, 0
		} else {
			rep.Uncovered++
		}
		for _, h := range expect[rec.Seq] {
			if h.Hash != rec.Hash && rep.Fork == nil {
				rep.Fork = &ChainError{Line: line, Seq: rec.Seq, Reason: fmt.Sprintf("differs from %s at this seq", h.Source)}
			}
			seen[rec.Seq] = true
		}
		prev, seq = rec.Hash, rec.Seq
		rep.Types[rec.Type] = true
		rep.Records++
		rep.Last, rep.Head, rep.End = rec.Seq, rec.Hash, end
		return true
	})
	if err != nil {
		rep.Err = err
		return rep
	}
	rep.TornTail = unterminated
	if rep.Fork != nil {
		rep.SignedFork = rep.Covered >= rep.Fork.Seq
	}
	if rep.Break != nil {
		return rep
	}
	for _, h := range opt.Expect {
		switch {
		case h.Seq == 0 || seen[h.Seq]:
		case rep.Export != nil && h.Seq > rep.Export.Seq:
			rep.Newer = append(rep.Newer, h)
		default:
			rep.missing(h)
		}
	}
	if e := rep.Export; e != nil && (e.Seq != rep.Last || e.Hash != rep.Head) {
		if e.Seq > rep.Last {
			rep.missing(*e)
		} else {
			rep.Truncated = append(rep.Truncated, fmt.Sprintf("the chain goes on to seq %d, past where %s says it ends (seq %d)", rep.Last, e.Source, e.Seq))
		}
	}
	return rep
}

// missing records h as a head the chain does not reach.
func (r *AuditReport) missing(h Head) {
	n := uint64(0)
	if h.Seq > r.Last {
		n = h.Seq - r.Last
	}
	r.Missing = append(r.Missing, Missing{Source: h.Source, Seq: h.Seq, Records: n})
	r.Truncated = append(r.Truncated, fmt.Sprintf("the chain ends at seq %d but %s is at seq %d: %d record(s) missing (records were cut off)", r.Last, h.Source, h.Seq, n))
}

// VerifyAudit checks a log as VerifyChain does, held to signer (or, when
// empty, the first signing key). It returns the number of good records
// and the first problem — a break, or a torn line — as a *ChainError.
func VerifyAudit(r io.Reader, signer string) (int, error) {
	rep := VerifyChain(r, VerifyOptions{Signer: signer})
	if rep.Err != nil {
		return rep.Records, rep.Err
	}
	if len(rep.Tears) > 0 && (rep.Break == nil || rep.Tears[0].Line < rep.Break.Line) {
		t := rep.Tears[0]
		return rep.Records, &t
	}
	if rep.Break != nil {
		return rep.Records, rep.Break
	}
	return rep.Records, nil
}

// ParseCheckpoint reads a published checkpoint (one record line) and
// checks its signature under signer.
func ParseCheckpoint(b []byte, signer string) (Head, error) {
	var rec Record
	if err := json.Unmarshal(bytes.TrimSpace(b), &rec); err != nil {
		return Head{}, fmt.Errorf("not a checkpoint record: %v", err)
	}
	if rec.Type != TypeCheckpoint {
		return Head{}, errors.New("not a checkpoint record")
	}
	if signer != "" && rec.Signer != signer {
		return Head{}, fmt.Errorf("checkpoint signed by %s, want %s", rec.Signer, signer)
	}
	d, err := rec.digest()
	if err != nil || hex.EncodeToString(d[:]) != rec.Hash {
		return Head{}, errors.New("checkpoint hash does not match its contents")
	}
	if err := verifySchnorr(rec.Signer, d[:], rec.Sig); err != nil {
		return Head{}, fmt.Errorf("checkpoint: %v", err)
	}
	return Head{Seq: rec.Seq, Hash: rec.Hash}, nil
}

func verifySchnorr(pubHex string, msg []byte, sigHex string) error {
	pb, err := hex.DecodeString(pubHex)
	if err != nil || len(pb) != 32 {
		return errors.New("signer is not a 32-byte hex public key")
	}
	sb, err := hex.DecodeString(sigHex)
	if err != nil {
		return errors.New("signature is not hex")
	}
	if len(sb) != 64 {
		return errors.New("signature is malformed")
	}
	if !VerifySchnorr(pb, msg, sb) {
		return errors.New("signature does not verify")
	}
	return nil
}
