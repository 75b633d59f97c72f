package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/netpolicy"
)

// The network policy's keys share the {net} hash tag, so the revision
// script runs on Redis Cluster too.
var _ netpolicy.Store = (*Store)(nil)

var _ netpolicy.KindCache = (*Store)(nil)

func (s *Store) netKey(name string) string { return s.key("net", "{net}", name) }

// PolicyChannel is the pub/sub channel each new revision number is
// published on.
func (s *Store) PolicyChannel() string { return s.key("net", "policy") }

// commitScript stores a revision as the next one, atomically: two
// approvals at once get consecutive numbers and neither is lost (the
// loser's Go side re-derives on the new current and tries again).
//
// KEYS: 1 revisions hash (field "cur" and one field a number), 2 applied
// hash (request id → revision). ARGV: 1 number expected, 2 revision JSON,
// 3 request id ("" for none), 4 channel.
// Returns {n, applied(0|1)}; n = -1 when the current moved on.
var commitScript = goredis.NewScript(`
if ARGV[3] ~= '' then
  local done = redis.call('HGET', KEYS[2], ARGV[3])
  if done then return {tonumber(done), 0} end
end
local cur = tonumber(redis.call('HGET', KEYS[1], 'cur') or '0')
if ARGV[2] == '' then
  -- Nothing to change (already allowed): only remember the request.
  if ARGV[3] ~= '' then redis.call('HSET', KEYS[2], ARGV[3], cur) end
  return {cur, 1}
end
if cur + 1 ~= tonumber(ARGV[1]) then return {-1, 0} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], 'cur', ARGV[1])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[2], ARGV[3], ARGV[1]) end
redis.call('PUBLISH', ARGV[4], ARGV[1])
return {tonumber(ARGV[1]), 1}
`)

// CurrentRevision returns the newest revision, or revision 0 (no doors).
func (s *Store) CurrentRevision(ctx context.Context) (netpolicy.Revision, error) {
	cur, err := s.rdb.HGet(ctx, s.netKey("revs"), "cur").Int()
	if errors.Is(err, goredis.Nil) {
		return netpolicy.Revision{Policy: netpolicy.Policy{Hosts: []netpolicy.Entry{}}, Diff: []string{}}, nil
	}
	if err != nil {
		return netpolicy.Revision{}, unavailable("current policy", err)
	}
	return s.Revision(ctx, cur)
}

// Revision returns revision n.
func (s *Store) Revision(ctx context.Context, n int) (netpolicy.Revision, error) {
	b, err := s.rdb.HGet(ctx, s.netKey("revs"), strconv.Itoa(n)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return netpolicy.Revision{}, bot.Errorf(bot.ENotFound, "there is no policy revision %d", n)
	}
	if err != nil {
		return netpolicy.Revision{}, unavailable("get policy revision", err)
	}
	var rev netpolicy.Revision
	if err := json.Unmarshal(b, &rev); err != nil {
		return netpolicy.Revision{}, fmt.Errorf("decode policy revision %d: %w", n, err)
	}
	return rev, nil
}

// CommitRevision stores rev as the next revision if rev.N is one past the
// current. A rev with N 0 only marks rev.Request applied at the current.
func (s *Store) CommitRevision(ctx context.Context, rev netpolicy.Revision) (int, bool, error) {
	var b []byte
	if rev.N > 0 {
		var err error
		if b, err = json.Marshal(rev); err != nil {
			return 0, false, err
		}
	}
	res, err := commitScript.Run(ctx, s.rdb, []string{s.netKey("revs"), s.netKey("applied")},
		rev.N, b, rev.Request, s.PolicyChannel()).Int64Slice()
	if err != nil {
		return 0, false, unavailable("commit policy revision", err)
	}
	if res[0] < 0 {
		return 0, false, netpolicy.ErrMoved
	}
	return int(res[0]), res[1] == 1, nil
}

// AppliedAt reports the revision request id was applied at.
func (s *Store) AppliedAt(ctx context.Context, id string) (int, bool, error) {
	n, err := s.rdb.HGet(ctx, s.netKey("applied"), id).Int()
	if errors.Is(err, goredis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, unavailable("applied revision", err)
	}
	return n, true, nil
}

// WatchPolicy subscribes to new revisions.
func (s *Store) WatchPolicy(ctx context.Context, fn func(n int)) error {
	return follow(ctx, s.rdb.Subscribe(ctx, s.PolicyChannel()), "policy", 64,
		func(m *goredis.Message) {
			if n, err := strconv.Atoi(m.Payload); err == nil {
				fn(n)
			}
		},
		func(*goredis.Subscription) { fn(0) })
}

// SetFileHash records the digest of the policy file last loaded and
// returns the one recorded before ("" for none).
func (s *Store) SetFileHash(ctx context.Context, h string) (string, error) {
	prev, err := s.rdb.SetArgs(ctx, s.netKey("filehash"), h, goredis.SetArgs{Get: true}).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return "", unavailable("policy file digest", err)
	}
	return prev, nil
}

// MaxDrafts bounds the drafts kept: past it a new destination is counted
// under no draft (an agent probing thousands of hosts cannot fill Redis).
const MaxDrafts = 10000

var maxDrafts int64 = MaxDrafts // tests lower it

// PutDraft adds a refusal to its draft in one transaction.
func (s *Store) PutDraft(ctx context.Context, d netpolicy.Draft) (netpolicy.Draft, error) {
	key := d.Key()
	b, err := json.Marshal(d)
	if err != nil {
		return d, err
	}
	n, err := s.rdb.HLen(ctx, s.netKey("drafts")).Result()
	if err != nil {
		return d, unavailable("count drafts", err)
	}
	if n >= maxDrafts {
		// Make room from drafts past their age before refusing.
		if _, err := s.Drafts(ctx); err != nil {
			return d, err
		}
		if n, err = s.rdb.HLen(ctx, s.netKey("drafts")).Result(); err != nil {
			return d, unavailable("count drafts", err)
		}
	}
	var created *goredis.BoolCmd
	cmds, err := s.rdb.TxPipelined(ctx, func(pl goredis.Pipeliner) error {
		if n < maxDrafts {
			created = pl.HSetNX(ctx, s.netKey("drafts"), key, b)
		}
		pl.HIncrBy(ctx, s.netKey("draftcount"), key, 1)
		pl.HSet(ctx, s.netKey("draftlast"), key, d.Last.UnixMilli())
		pl.HGet(ctx, s.netKey("drafts"), key)
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return d, unavailable("put draft", err)
	}
	raw := cmds[len(cmds)-1].(*goredis.StringCmd).Val()
	if raw == "" {
		return d, bot.Errorf(bot.EUnavailable, "too many drafts (%d), all refused in the last week: approve some, or wait for them to age out", maxDrafts)
	}
	var got netpolicy.Draft
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		return d, fmt.Errorf("decode draft: %w", err)
	}
	if created != nil && created.Val() {
		s.rdb.HSet(ctx, s.netKey("draftids"), got.ID, key)
	}
	got.Count = cmds[len(cmds)-3].(*goredis.IntCmd).Val()
	got.Last = d.Last
	return got, nil
}

// Drafts returns every draft, most refused first.
func (s *Store) Drafts(ctx context.Context) ([]netpolicy.Draft, error) {
	var all, counts, last *goredis.MapStringStringCmd
	var links *goredis.MapStringStringCmd
	_, err := s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		all = pl.HGetAll(ctx, s.netKey("drafts"))
		counts = pl.HGetAll(ctx, s.netKey("draftcount"))
		last = pl.HGetAll(ctx, s.netKey("draftlast"))
		links = pl.HGetAll(ctx, s.netKey("draftreq"))
		return nil
	})
	if err != nil {
		return nil, unavailable("list drafts", err)
	}
	out := []netpolicy.Draft{}
	var stale []netpolicy.Draft
	cutoff := time.Now().Add(-netpolicy.DraftTTL)
	for key, raw := range all.Val() {
		var d netpolicy.Draft
		if json.Unmarshal([]byte(raw), &d) != nil {
			continue
		}
		d.Count, _ = strconv.ParseInt(counts.Val()[key], 10, 64)
		if ms, err := strconv.ParseInt(last.Val()[key], 10, 64); err == nil {
			d.Last = unixMilli(ms)
		}
		d.Request = links.Val()[d.ID]
		if d.Last.Before(cutoff) {
			stale = append(stale, d)
			continue
		}
		out = append(out, d)
	}
	if err := s.dropDrafts(ctx, stale); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// dropDrafts removes drafts past their age (netpolicy.DraftTTL), with
// their counts; a request one of them became is kept.
func (s *Store) dropDrafts(ctx context.Context, ds []netpolicy.Draft) error {
	if len(ds) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		for _, d := range ds {
			key := d.Key()
			pl.HDel(ctx, s.netKey("drafts"), key)
			pl.HDel(ctx, s.netKey("draftcount"), key)
			pl.HDel(ctx, s.netKey("draftlast"), key)
			pl.HDel(ctx, s.netKey("draftids"), d.ID)
			pl.HDel(ctx, s.netKey("draftreq"), d.ID)
		}
		return nil
	})
	if err != nil {
		return unavailable("drop old drafts", err)
	}
	return nil
}

// LinkDraft records the request a draft became.
func (s *Store) LinkDraft(ctx context.Context, draftID, requestID string) error {
	if err := s.rdb.HSet(ctx, s.netKey("draftreq"), draftID, requestID).Err(); err != nil {
		return unavailable("link draft", err)
	}
	return nil
}

// MaxRecords bounds the network requests kept; the oldest go first.
const MaxRecords = 10000

// PutRecord stores a network request's destination.
func (s *Store) PutRecord(ctx context.Context, r netpolicy.Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		pl.HSet(ctx, s.netKey("reqs"), r.ID, b)
		pl.ZAdd(ctx, s.netKey("reqorder"), goredis.Z{Score: float64(r.CreatedAt.UnixMilli()), Member: r.ID})
		return nil
	})
	if err != nil {
		return unavailable("put network request", err)
	}
	if n, _ := s.rdb.ZCard(ctx, s.netKey("reqorder")).Result(); n > MaxRecords {
		old, _ := s.rdb.ZRange(ctx, s.netKey("reqorder"), 0, n-MaxRecords-1).Result()
		if len(old) > 0 {
			s.rdb.HDel(ctx, s.netKey("reqs"), old...)
			s.rdb.ZRem(ctx, s.netKey("reqorder"), toAny(old)...)
		}
	}
	return nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// Record returns the network request id.
func (s *Store) Record(ctx context.Context, id string) (netpolicy.Record, error) {
	b, err := s.rdb.HGet(ctx, s.netKey("reqs"), id).Bytes()
	if errors.Is(err, goredis.Nil) {
		return netpolicy.Record{}, bot.Errorf(bot.ENotFound, "unknown network request %q", id)
	}
	if err != nil {
		return netpolicy.Record{}, unavailable("get network request", err)
	}
	var r netpolicy.Record
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("decode network request: %w", err)
	}
	return r, nil
}

// Records returns the network requests, oldest first.
func (s *Store) Records(ctx context.Context) ([]netpolicy.Record, error) {
	ids, err := s.rdb.ZRange(ctx, s.netKey("reqorder"), 0, -1).Result()
	if err != nil {
		return nil, unavailable("list network requests", err)
	}
	out := []netpolicy.Record{}
	if len(ids) == 0 {
		return out, nil
	}
	vals, err := s.rdb.HMGet(ctx, s.netKey("reqs"), ids...).Result()
	if err != nil {
		return nil, unavailable("get network requests", err)
	}
	for _, v := range vals {
		raw, _ := v.(string)
		var r netpolicy.Record
		if raw != "" && json.Unmarshal([]byte(raw), &r) == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// SetStaged keeps an edited copy of the policy for request id.
func (s *Store) SetStaged(ctx context.Context, id string, st netpolicy.Staged) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := s.rdb.HSet(ctx, s.netKey("staged"), id, b).Err(); err != nil {
		return unavailable("stage policy", err)
	}
	return nil
}

// GetStaged returns the edited copy staged for request id, or nil.
func (s *Store) GetStaged(ctx context.Context, id string) (*netpolicy.Staged, error) {
	b, err := s.rdb.HGet(ctx, s.netKey("staged"), id).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailable("get staged policy", err)
	}
	var st netpolicy.Staged
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("decode staged policy: %w", err)
	}
	return &st, nil
}

// SetDenyReason keeps the reason voter gave for denying request id.
func (s *Store) SetDenyReason(ctx context.Context, id, voter, reason string) error {
	k := s.netKey("deny:" + id)
	_, err := s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		pl.HSet(ctx, k, voter, reason)
		pl.Expire(ctx, k, s.Retention)
		return nil
	})
	if err != nil {
		return unavailable("keep denial reason", err)
	}
	return nil
}

// DenyReasons returns voter → reason for request id.
func (s *Store) DenyReasons(ctx context.Context, id string) (map[string]string, error) {
	m, err := s.rdb.HGetAll(ctx, s.netKey("deny:"+id)).Result()
	if err != nil {
		return nil, unavailable("get denial reasons", err)
	}
	return m, nil
}

func unixMilli(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
