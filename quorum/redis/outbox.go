package redis

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
)

// The outbox is one stream of decided request ids with one consumer
// group: each decision is delivered (audited, its cards edited) by one
// live replica, and a replica that stopped has its entries claimed by
// another after they sat idle.

const outboxGroup = "deliver"

func (s *Store) outboxKey() string { return s.prefix + ":{outbox}" }

var _ bot.Outbox = (*Store)(nil)

// enqueue adds a decision to the outbox (when the deciding script could
// not: on Cluster, or outside the audited vote), trying a few times, then
// takes it out of the pending index. One that cannot be enqueued stays
// there, for the outbox sweeper (SweepUnqueued).
func (s *Store) enqueue(ctx context.Context, id string) {
	ctx = context.WithoutCancel(ctx)
	for attempt := 0; attempt < 5; attempt++ {
		err := s.rdb.XAdd(ctx, &goredis.XAddArgs{Stream: s.outboxKey(), MaxLen: 100000, Approx: true, Values: []any{"id", id}}).Err()
		if err == nil {
			s.rdb.ZRem(ctx, s.key("pending"), id)
			return
		}
		time.Sleep(time.Duration(50<<attempt) * time.Millisecond)
	}
}

func (s *Store) ensureGroup(ctx context.Context) error {
	err := s.rdb.XGroupCreateMkStream(ctx, s.outboxKey(), outboxGroup, "0").Err()
	if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		return unavailable("outbox group", err)
	}
	return nil
}

func entries(streams []goredis.XStream) []bot.OutboxEntry {
	var out []bot.OutboxEntry
	for _, st := range streams {
		for _, m := range st.Messages {
			id, _ := m.Values["id"].(string)
			out = append(out, bot.OutboxEntry{EntryID: m.ID, RequestID: id})
		}
	}
	return out
}

// ReadOutbox returns decisions for consumer: its own unacknowledged ones
// when pending is set, else new ones, waiting up to block (negative: not
// at all).
func (s *Store) ReadOutbox(ctx context.Context, consumer string, max int, block time.Duration, pending bool) ([]bot.OutboxEntry, error) {
	start := ">"
	if pending {
		start = "0"
	}
	args := &goredis.XReadGroupArgs{Group: outboxGroup, Consumer: consumer, Streams: []string{s.outboxKey(), start}, Count: int64(max), Block: block}
	if block < 0 {
		args.Block = -1
	}
	res, err := s.rdb.XReadGroup(ctx, args).Result()
	if err != nil && strings.Contains(err.Error(), "NOGROUP") {
		if err := s.ensureGroup(ctx); err != nil {
			return nil, err
		}
		res, err = s.rdb.XReadGroup(ctx, args).Result()
	}
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailable("read outbox", err)
	}
	return entries(res), nil
}

// ClaimOutbox takes over entries idle longer than idle (their replica
// stopped, or its delivery failed) for consumer.
func (s *Store) ClaimOutbox(ctx context.Context, consumer string, idle time.Duration, max int) ([]bot.OutboxEntry, error) {
	msgs, _, err := s.rdb.XAutoClaim(ctx, &goredis.XAutoClaimArgs{
		Stream: s.outboxKey(), Group: outboxGroup, Consumer: consumer, MinIdle: idle, Start: "0-0", Count: int64(max),
	}).Result()
	if err != nil && strings.Contains(err.Error(), "NOGROUP") {
		return nil, s.ensureGroup(ctx)
	}
	if err != nil {
		return nil, unavailable("claim outbox", err)
	}
	return entries([]goredis.XStream{{Messages: msgs}}), nil
}

// AckOutbox marks an entry delivered and deletes it, in one round trip.
func (s *Store) AckOutbox(ctx context.Context, entryID string) error {
	var ack *goredis.IntCmd
	s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		ack = pl.XAck(ctx, s.outboxKey(), outboxGroup, entryID)
		pl.XDel(ctx, s.outboxKey(), entryID) // the stream is trimmed at each XADD too
		return nil
	})
	if err := ack.Err(); err != nil {
		return unavailable("ack outbox", err)
	}
	return nil
}

// MarkStep records that step of request id's delivery is done; false
// when it already was.
func (s *Store) MarkStep(ctx context.Context, id, step string) (bool, error) {
	ok, err := s.rdb.HSetNX(ctx, s.requestKeys(id)[0], "done:"+step, time.Now().UnixMilli()).Result()
	if err != nil {
		return false, unavailable("mark step", err)
	}
	return ok, nil
}

// StepDone reports whether step of request id's delivery is done.
func (s *Store) StepDone(ctx context.Context, id, step string) (bool, error) {
	ok, err := s.rdb.HExists(ctx, s.requestKeys(id)[0], "done:"+step).Result()
	if err != nil {
		return false, unavailable("step done", err)
	}
	return ok, nil
}

// auditOnceScript appends a decision's record to the chain and marks the
// request audited, in one step; an already audited request is left alone.
// KEYS: 1 audit head, 2 audit stream, 3 request hash. ARGV: 1 seq, 2 prev,
// 3 hash, 4 line. Returns 1 appended, 0 already audited, -1 head moved.
var auditOnceScript = goredis.NewScript(`
if redis.call('HEXISTS', KEYS[3], 'done:audit') == 1 then return 0 end
local h = redis.call('HMGET', KEYS[1], 'seq', 'hash')
local cur = tonumber(h[1] or '0')
if tonumber(ARGV[1]) ~= cur + 1 or (cur > 0 and h[2] ~= ARGV[2]) then return -1 end
redis.call('XADD', KEYS[2], ARGV[1] .. '-1', 'r', ARGV[4])
redis.call('HSET', KEYS[1], 'seq', ARGV[1], 'hash', ARGV[3])
redis.call('HSET', KEYS[3], 'done:audit', '1')
return 1
`)

// auditDecisionScript is auditOnceScript for Cluster, where the request's
// hash is in another slot: the chain's own set of audited decisions (in
// the {audit} slot, kept a week) says whether id has its record, so two
// deliveries at once, or one after a crash between the append and the
// request's mark, append it once. KEYS: 1 audit head, 2 audit stream,
// 3 audited decisions. ARGV: 1 seq, 2 prev, 3 hash, 4 line, 5 id, 6 now
// (ms). Returns 1 appended, 0 already audited, -1 head moved.
var auditDecisionScript = goredis.NewScript(`
if redis.call('ZSCORE', KEYS[3], ARGV[5]) then return 0 end
local h = redis.call('HMGET', KEYS[1], 'seq', 'hash')
local cur = tonumber(h[1] or '0')
if tonumber(ARGV[1]) ~= cur + 1 or (cur > 0 and h[2] ~= ARGV[2]) then return -1 end
redis.call('XADD', KEYS[2], ARGV[1] .. '-1', 'r', ARGV[4])
redis.call('HSET', KEYS[1], 'seq', ARGV[1], 'hash', ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', tonumber(ARGV[6]) - 7 * 24 * 3600 * 1000)
return 1
`)

// AppendAuditOnce appends rec as request id's decision record unless it
// has one. On Cluster (other slots) the request's mark follows the append.
func (s *Store) AppendAuditOnce(ctx context.Context, id string, rec bot.AuditRef) (bool, error) {
	if done, err := s.StepDone(ctx, id, "audit"); err != nil || done {
		return false, err
	}
	if !rec.Shared {
		return s.MarkStep(ctx, id, "audit")
	}
	if _, cluster := s.rdb.(*goredis.ClusterClient); cluster {
		keys := append(s.auditKeys(), s.prefix+":{audit}:decided")
		n, err := auditDecisionScript.Run(ctx, s.rdb, keys, rec.Seq, rec.Prev, rec.Hash, rec.Line, id, time.Now().UnixMilli()).Int()
		if err != nil {
			return false, unavailable("append audit", err)
		}
		if n < 0 {
			return false, bot.ErrAuditConflict
		}
		_, err = s.MarkStep(ctx, id, "audit")
		return n == 1, err
	}
	keys := append(s.auditKeys(), s.requestKeys(id)[0])
	n, err := auditOnceScript.Run(ctx, s.rdb, keys, rec.Seq, rec.Prev, rec.Hash, rec.Line).Int()
	if err != nil {
		return false, unavailable("append audit", err)
	}
	if n < 0 {
		return false, bot.ErrAuditConflict
	}
	return n == 1, nil
}

// SweepUnqueued finds decisions that never reached the outbox and
// enqueues them. On Cluster the deciding script cannot write the outbox
// (another slot), so the Go side enqueues after it; a replica that dies in
// between leaves a decided request still in the pending index, which
// every decision leaves only once enqueued. Requests decided less than
// grace ago are left to the replica deciding them. One replica at a time
// sweeps (a lock held for lease); an entry enqueued twice is harmless, as
// delivery is idempotent. It returns the ids enqueued.
func (s *Store) SweepUnqueued(ctx context.Context, owner string, grace, lease time.Duration, now time.Time) ([]string, error) {
	lock := s.key("outbox-sweep")
	ok, err := s.rdb.SetNX(ctx, lock, owner, lease).Result()
	if err != nil {
		return nil, unavailable("outbox sweep lock", err)
	}
	if !ok {
		return nil, nil
	}
	const batch = 500
	var found []string
	for start := int64(0); ; start += batch {
		ids, err := s.rdb.ZRange(ctx, s.key("pending"), start, start+batch-1).Result()
		if err != nil {
			return found, unavailable("outbox sweep", err)
		}
		cmds := make([]*goredis.SliceCmd, len(ids))
		if _, err := s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
			for i, id := range ids {
				cmds[i] = pl.HMGet(ctx, s.requestKeys(id)[0], "status", "decided_at")
			}
			return nil
		}); err != nil && !errors.Is(err, goredis.Nil) {
			return found, unavailable("outbox sweep", err)
		}
		var orphans []string
		for i, c := range cmds {
			v := c.Val()
			if len(v) < 2 {
				continue
			}
			st, _ := v[0].(string)
			if st == "" || st == string(bot.Pending) {
				continue
			}
			at, _ := v[1].(string)
			ms, err := strconv.ParseInt(at, 10, 64)
			if err == nil && now.Sub(time.UnixMilli(ms)) < grace {
				continue
			}
			orphans = append(orphans, ids[i])
		}
		for _, id := range orphans {
			if err := s.rdb.XAdd(ctx, &goredis.XAddArgs{Stream: s.outboxKey(), MaxLen: 100000, Approx: true, Values: []any{"id", id}}).Err(); err != nil {
				return found, unavailable("outbox sweep enqueue", err)
			}
			s.rdb.ZRem(ctx, s.key("pending"), id)
			found = append(found, id)
		}
		if len(ids) < batch {
			return found, nil
		}
		start -= int64(len(orphans)) // the removed ones shifted the ranks
	}
}
