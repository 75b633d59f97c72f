package console

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// MaxHistory caps the records a request's history shows.
const MaxHistory = 1000

// AuditFile reads the gateway's audit log for the console: the chain's
// state, held to its published checkpoint (and the store's head, when
// StoreHead is set), and one request's records.
type AuditFile struct {
	Path   string // the log; its checkpoint is Path+".checkpoint"
	Signer string // the gateway key (hex) every checkpoint must be signed by
	// StoreHead, when set, is the head the shared store holds (a real
	// Redis): the chain must reach it.
	StoreHead func(ctx context.Context) (uint64, string, error)
	Now       func() time.Time
}

// AuditState is what the console shows of the chain.
type AuditState struct {
	Path        string    `json:"path"`
	Records     int       `json:"records"`
	Last        uint64    `json:"last_seq"`
	Head        string    `json:"head"`
	Checkpoints int       `json:"checkpoints"`
	Covered     uint64    `json:"checkpoint_seq"`
	Uncovered   int       `json:"uncovered"`
	Signer      string    `json:"signer"`
	Verified    bool      `json:"verified"`
	Problems    []string  `json:"problems"`
	Witnesses   []string  `json:"witnesses"` // what the chain was held to
	CheckedAt   time.Time `json:"checked_at"`
}

// State verifies the chain as `signoff audit verify` does and says what
// it found.
func (a *AuditFile) State(ctx context.Context) (*AuditState, error) {
	opt := signing.VerifyOptions{Signer: a.Signer}
	st := &AuditState{Path: a.Path, Signer: a.Signer, Problems: []string{}, Witnesses: []string{}}
	if a.StoreHead != nil { // read first: records added meanwhile come after it
		seq, hash, err := a.StoreHead(ctx)
		if err != nil {
			return nil, err
		}
		opt.Expect = append(opt.Expect, signing.Head{Seq: seq, Hash: hash, Source: "the store's head"})
		st.Witnesses = append(st.Witnesses, fmt.Sprintf("the store's head (seq %d)", seq))
	}
	cp := a.Path + ".checkpoint"
	switch b, err := os.ReadFile(cp); {
	case err == nil:
		h, err := signing.ParseCheckpoint(b, a.Signer)
		if err != nil {
			st.Problems = append(st.Problems, "published checkpoint "+cp+": "+err.Error())
		} else {
			h.Source = "the published checkpoint " + cp
			opt.Expect = append(opt.Expect, h)
			st.Witnesses = append(st.Witnesses, fmt.Sprintf("the published checkpoint %s (seq %d)", cp, h.Seq))
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, bot.Errorf(bot.EUnavailable, "read the checkpoint: %v", err)
	}
	f, err := os.Open(a.Path)
	if err != nil {
		return nil, bot.Errorf(bot.EUnavailable, "open the audit log: %v", err)
	}
	defer f.Close()
	rep := signing.VerifyChain(f, opt)
	if rep.Err != nil {
		return nil, bot.Errorf(bot.EUnavailable, "read the audit log: %v", rep.Err)
	}
	st.Records, st.Last, st.Head = rep.Records, rep.Last, rep.Head
	st.Checkpoints, st.Covered, st.Uncovered = rep.Checkpoints, rep.Covered, rep.Uncovered
	if rep.Break != nil {
		st.Problems = append(st.Problems, "broken: "+rep.Break.Error())
	}
	st.Problems = append(st.Problems, rep.Truncated...)
	st.Verified = rep.OK() && len(st.Problems) == 0
	st.CheckedAt = time.Now().UTC()
	if a.Now != nil {
		st.CheckedAt = a.Now().UTC()
	}
	return st, nil
}

// History returns the records of request id, in order (at most
// MaxHistory): the request, every vote with its evidence, the decision
// and its receipt.
func (a *AuditFile) History(ctx context.Context, id string) ([]signing.Record, error) {
	f, err := os.Open(a.Path)
	if err != nil {
		return nil, bot.Errorf(bot.EUnavailable, "open the audit log: %v", err)
	}
	defer f.Close()
	needle := []byte(`"request_id":` + quote(id))
	out := []signing.Record{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		line := sc.Bytes()
		if !bytes.Contains(line, needle) {
			continue
		}
		var r signing.Record
		if json.Unmarshal(line, &r) != nil || r.RequestID != id {
			continue
		}
		out = append(out, r)
		if len(out) == MaxHistory {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return nil, bot.Errorf(bot.EUnavailable, "read the audit log: %v", err)
	}
	return out, nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
