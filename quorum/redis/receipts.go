package redis

import (
	"context"
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
// announces it. KEYS: 1 request hash. ARGV: 1 receipt, 2 channel, 3 id.
// Returns 1 when saved, 0 when the request is missing, still pending, or
// already has one.
var saveReceiptScript = goredis.NewScript(`
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == 'pending' then return 0 end
if redis.call('HSETNX', KEYS[1], 'receipt', ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'done:seal', '1')
redis.call('PUBLISH', ARGV[2] .. ':notice', 'c\n' .. ARGV[3])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
`)

// SaveReceipt stores the gateway's signed receipt beside the decided
// request and wakes every waiter on it.
func (s *Store) SaveReceipt(ctx context.Context, id string, raw json.RawMessage) error {
	if err := saveReceiptScript.Run(ctx, s.rdb, s.requestKeys(id)[:1], []byte(raw), s.channel(), id).Err(); err != nil {
		return unavailable("save receipt", err)
	}
	return nil
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
