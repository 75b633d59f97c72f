package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/quorum"
)

var (
	_ bot.ReceiptStore      = (*Store)(nil)
	_ bot.DecisionConfirmer = (*Store)(nil)
)

// saveReceiptScript keeps the first receipt of a decided request and
// announces it with its hash and the request's lists' lengths (notice.go).
// KEYS: 1 request hash, 2 its votes, 3 its messages. ARGV: 1 receipt,
// 2 channel, 3 id. Returns {1, votes, messages} when saved, {0} when the
// request is missing, still pending, or already has one.
var saveReceiptScript = goredis.NewScript(`
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == 'pending' then return {0} end
if redis.call('HSETNX', KEYS[1], 'receipt', ARGV[1]) == 0 then return {0} end
redis.call('HSET', KEYS[1], 'done:seal', '1')
local nv, nm = redis.call('LLEN', KEYS[2]), redis.call('LLEN', KEYS[3])
redis.call('PUBLISH', ARGV[2] .. ':notice', 'r\n' .. redis.sha1hex(ARGV[1]) .. '\n' .. ARGV[3] .. '\n' .. nv .. '\n' .. nm)
redis.call('PUBLISH', ARGV[2], ARGV[3])
return {1, nv, nm}
`)

// SaveReceipt stores the gateway's signed receipt beside the decided
// request and wakes every waiter on it. When this receipt is the one kept
// and this store's last read of the request holds every vote and message
// it has now, known gives (fresh copies of) the request with the receipt,
// as a read would: the sealing gateway's waiters need not read it, nor
// do those the receipt's notice wakes here (notice.go).
func (s *Store) SaveReceipt(ctx context.Context, id string, raw json.RawMessage) (known func() *bot.Request, err error) {
	next := s.withReceipt(id, raw)
	k := s.requestKeys(id)
	res, err := saveReceiptScript.Run(ctx, s.rdb, []string{k[0], k[1], k[4]}, []byte(raw), s.channel(), id).Int64Slice()
	if err != nil {
		return nil, unavailable("save receipt", err)
	}
	if next == nil {
		return nil, nil
	}
	if len(res) != 3 || res[0] != 1 || int64(len(next.entry.votes)) != res[1] || int64(len(next.entry.msgs)) != res[2] {
		s.notices.mu.Lock()
		if m := s.notices.marks[id]; m != nil && m.saving == next.savingReceipt {
			m.saving = nil // not this receipt's notice, or one to read
		}
		s.notices.mu.Unlock()
		return nil, nil
	}
	s.decoded.replace(next.prev, next.entry)
	return next.entry.known, nil
}

// receiptRead is a read of a request with a receipt being saved added.
type receiptRead struct {
	*savingReceipt
	prev *decodedEntry // the read as the decode cache holds it
}

// withReceipt is this store's last read of decided request id with raw
// as its receipt (nil: none, or one that has a receipt), left for the
// receipt's notice in the request's mark when this store's notices are
// followed.
func (s *Store) withReceipt(id string, raw json.RawMessage) *receiptRead {
	if s.decoded == nil {
		return nil
	}
	e := s.decoded.get(id)
	if e == nil || e.f.receipt != "" || !bot.Status(e.f.status).Final() {
		return nil
	}
	next := *e
	next.f.receipt = string(raw)
	sum := sha1.Sum(raw)
	sv := &savingReceipt{entry: &next, hash: hex.EncodeToString(sum[:])}
	s.notices.mu.Lock()
	if s.notices.watching == 1 && !s.notices.shared {
		s.notices.markLocked(id).saving = sv
	}
	s.notices.mu.Unlock()
	return &receiptRead{savingReceipt: sv, prev: e}
}

// ConfirmDecision says whether r's approval follows from the votes the
// store holds for it, each judged again under the persona r was created
// with and tallied by quorum.Tally (votes at or past the deadline do not
// count, as in the vote script), and whether those votes make its grant.
// A status written into the store by hand, with no such votes, is not
// confirmed. A denial or an expiry needs no confirming.
func (s *Store) ConfirmDecision(ctx context.Context, r *bot.Request) (grant bool, err error) {
	if r.Status != bot.Approved {
		return false, nil
	}
	p, err := s.snapshot(ctx, r.ID)
	if err != nil {
		return false, err
	}
	casts := make([]quorum.Cast, 0, len(r.Votes))
	for _, v := range r.Votes {
		if !r.Deadline.IsZero() && !v.At.Before(r.Deadline) {
			continue
		}
		j := quorum.Judge(p, v.Voter, v.Proof)
		casts = append(casts, quorum.Cast{Person: j.Person, Role: j.Role, Choice: v.Choice})
	}
	d := quorum.Tally(p, casts)
	by := slices.Sorted(slices.Values(r.DecidedBy))
	if d.Status != bot.Approved || !slices.Equal(d.By, by) {
		return false, bot.Errorf(bot.EConflict, "the store says approved by %s, but the votes it holds decide %s by %s",
			strings.Join(by, ", "), d.Status, strings.Join(d.By, ", "))
	}
	return d.Grant, nil
}
