package redis

import (
	"context"
	"errors"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
)

// The audit chain lives in one stream whose entry ids are the records'
// seq numbers ("<seq>-1"), beside a hash holding its head; both carry the
// {audit} hash tag, so one script may touch them on Cluster too.

// auditAppendScript adds a record only if it follows the head.
// KEYS: 1 head hash, 2 stream. ARGV: 1 seq, 2 prev, 3 hash, 4 line.
var auditAppendScript = goredis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'seq', 'hash')
local cur = tonumber(h[1] or '0')
local want = tonumber(ARGV[1])
if want ~= cur + 1 or (cur > 0 and h[2] ~= ARGV[2]) then return 0 end
redis.call('XADD', KEYS[2], ARGV[1] .. '-1', 'r', ARGV[4])
redis.call('HSET', KEYS[1], 'seq', ARGV[1], 'hash', ARGV[3])
return 1
`)

// auditSeedScript sets the head of an empty chain. KEYS: 1 head. ARGV: 1 seq, 2 hash.
var auditSeedScript = goredis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'seq', ARGV[1], 'hash', ARGV[2], 'seeded', ARGV[1])
return 1
`)

func (s *Store) auditKeys() []string {
	return []string{s.prefix + ":{audit}:head", s.prefix + ":{audit}:log"}
}

// AuditHead returns the chain's last seq and hash (0, "" when empty).
func (s *Store) AuditHead(ctx context.Context) (uint64, string, error) {
	h, err := s.rdb.HMGet(ctx, s.auditKeys()[0], "seq", "hash").Result()
	if err != nil {
		return 0, "", unavailable("audit head", err)
	}
	seqS, _ := h[0].(string)
	hash, _ := h[1].(string)
	if seqS == "" {
		return 0, "", nil
	}
	seq, err := strconv.ParseUint(seqS, 10, 64)
	if err != nil {
		return 0, "", errors.New("audit head: seq is not a number")
	}
	return seq, hash, nil
}

// AppendAudit stores line as record seq if the head is seq-1 with hash prev.
func (s *Store) AppendAudit(ctx context.Context, seq uint64, prev, hash string, line []byte) (bool, error) {
	n, err := auditAppendScript.Run(ctx, s.rdb, s.auditKeys(), seq, prev, hash, line).Int()
	if err != nil {
		return false, unavailable("append audit", err)
	}
	return n == 1, nil
}

// AuditRecords returns up to max records after seq, in order.
func (s *Store) AuditRecords(ctx context.Context, after uint64, max int) ([][]byte, error) {
	msgs, err := s.rdb.XRangeN(ctx, s.auditKeys()[1], strconv.FormatUint(after+1, 10)+"-0", "+", int64(max)).Result()
	if err != nil {
		return nil, unavailable("read audit", err)
	}
	out := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		line, _ := m.Values["r"].(string)
		out = append(out, []byte(line))
	}
	return out, nil
}

// SeedAudit sets an empty chain's head; the records before it are in the
// replicas' files.
func (s *Store) SeedAudit(ctx context.Context, seq uint64, hash string) (bool, error) {
	n, err := auditSeedScript.Run(ctx, s.rdb, s.auditKeys()[:1], seq, hash).Int()
	if err != nil {
		return false, unavailable("seed audit", err)
	}
	return n == 1, nil
}

// AuditSeeded is the seq the stream was seeded at (its first record is the
// one after it), or 0 when it holds the whole chain.
func (s *Store) AuditSeeded(ctx context.Context) (uint64, error) {
	v, err := s.rdb.HGet(ctx, s.auditKeys()[0], "seeded").Result()
	if errors.Is(err, goredis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, unavailable("audit head", err)
	}
	n, _ := strconv.ParseUint(v, 10, 64)
	return n, nil
}

// auditedVoteScript tallies a vote and, in the same atomic step, appends
// its audit record — unless the chain's head moved (another replica
// appended first), when it does nothing and says "conflict". The record
// joins the chain when the vote is stored (not a duplicate delivery, not a
// stranger's answer past the bound); a decision joins the outbox in the
// same step, and leaves the pending index in it (no round trip after).
// KEYS: the vote script's four, 5 audit head, 6 audit stream, 7 outbox,
// 8 pending index. ARGV: the vote script's eleven, 12 seq, 13 prev,
// 14 hash, 15 line. Returns the vote script's six values and in-chain (0|1).
//
// Redis does not undo a script's writes when a later call fails, so the
// record's XADD is the script's first write (stored(), called by the vote
// script before it writes anything): XADD refuses a stream of another
// type, and an id at or below the last one the stream ever made, even if
// that entry was deleted since (an OOM is refused at a script's first
// write, not later ones). A chain with no head has no records in the
// store; a stream there (its head was lost) is refused before that, as
// the embedded server's XADD would take an id of a deleted entry.
var auditedVoteScript = goredis.NewScript(`
local h = redis.call('HMGET', KEYS[5], 'seq', 'hash')
local cur = tonumber(h[1] or '0')
if tonumber(ARGV[12]) ~= cur + 1 or (cur > 0 and h[2] ~= ARGV[13]) then return {'conflict', '', '', 0, 0, 0, 0} end
if cur == 0 and redis.call('EXISTS', KEYS[6]) == 1 then
  return redis.error_reply('audit stream ' .. KEYS[6] .. ' holds records but the chain has no head')
end
local appended = 0
local function stored()
  redis.call('XADD', KEYS[6], ARGV[12] .. '-1', 'r', ARGV[15])
  redis.call('HSET', KEYS[5], 'seq', ARGV[12], 'hash', ARGV[14])
  appended = 1
end
local function tally()
` + voteLua + `
end
local res = tally()
if res[4] == 1 then
  redis.call('XADD', KEYS[7], 'MAXLEN', '~', '100000', '*', 'id', ARGV[9])
  redis.call('ZREM', KEYS[8], ARGV[9])
end
return {res[1], res[2], res[3], res[4], res[5], res[6] or 0, appended}
`)

// RecordVoteAudited tallies b and appends its audit record in one step.
// On Cluster the audit keys live in another slot than the request's, so
// the record is appended first (write-ahead) and the vote tallied after.
func (s *Store) RecordVoteAudited(ctx context.Context, b bot.Ballot, rec bot.AuditRef) (bot.VoteOutcome, bool, error) {
	if !rec.Shared {
		out, err := s.RecordVote(ctx, b)
		return out, err == nil && out.Recorded, err
	}
	if _, cluster := s.rdb.(*goredis.ClusterClient); cluster {
		ok, err := s.AppendAudit(ctx, rec.Seq, rec.Prev, rec.Hash, rec.Line)
		if err != nil {
			return bot.VoteOutcome{}, false, err
		}
		if !ok {
			return bot.VoteOutcome{}, false, bot.ErrAuditConflict
		}
		out, err := s.RecordVote(ctx, b)
		return out, true, err
	}
	out, appended, err := s.runVote(ctx, b, auditedVoteScript, append(s.auditKeys(), s.outboxKey(), s.key("pending")), []any{rec.Seq, rec.Prev, rec.Hash, rec.Line})
	return out, appended == 1, err
}
