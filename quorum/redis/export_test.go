package redis

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/tokens"
)

// OutboxKey is the outbox stream's key.
func (s *Store) OutboxKey() string { return s.outboxKey() }

// SetMaxDrafts lowers the bound on drafts for a test; the returned func
// puts it back.
func SetMaxDrafts(n int64) func() {
	old := maxDrafts
	maxDrafts = n
	return func() { maxDrafts = old }
}

// LegacyVoteScript is the vote script of the version before a request's
// voters and deliveries moved into its hash, as that version ran it.
func LegacyVoteScript(t testing.TB) string {
	b, err := os.ReadFile("testdata/vote-before-hash-fields.lua")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// RecordVoteWith is RecordVote running src as the vote script (another
// version's, as a replica of that version would).
func (s *Store) RecordVoteWith(ctx context.Context, b bot.Ballot, src string) (bot.VoteOutcome, error) {
	out, _, err := s.runVote(ctx, b, goredis.NewScript(src), nil, nil)
	return out, err
}

// KeepTokensFor sets how long s answers a token, or HasTokens, from
// memory (TokenMemoryFor outside tests): an hour shows that only a
// message, or a resubscription, made it read again.
func (s *Store) KeepTokensFor(d time.Duration) {
	s.kept.mu.Lock()
	defer s.kept.mu.Unlock()
	s.kept.keepFor = d
}

// The token scripts of the version before the token channel, as its
// replicas and its `signoff tokens` run them: they announce nothing.
var (
	legacyCreateTokenScript = goredis.NewScript(`
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[2], 'rec', ARGV[3])
return 1
`)
	legacyRevokeTokenScript = goredis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
return 1
`)
)

// CreateTokenUnannounced is CreateToken as the version before the token
// channel makes it.
func (s *Store) CreateTokenUnannounced(ctx context.Context, t *tokens.Token) error {
	b, err := json.Marshal(tokenRecord{Token: *t, Hash: hex.EncodeToString(t.Hash)})
	if err != nil {
		return err
	}
	return legacyCreateTokenScript.Run(ctx, s.rdb, []string{s.tokenNames(), s.tokenKey(t.ID)}, t.Name, t.ID, b).Err()
}

// RevokeTokenUnannounced is RevokeToken as the version before the token
// channel makes it (a token no other replica is told of).
func (s *Store) RevokeTokenUnannounced(ctx context.Context, name string) error {
	id, err := s.rdb.HGet(ctx, s.tokenNames(), name).Result()
	if err != nil {
		return err
	}
	return legacyRevokeTokenScript.Run(ctx, s.rdb, []string{s.tokenNames(), s.tokenKey(id)}, name, id).Err()
}

// TokenChangesHeard counts the changes, (re)subscriptions and ends s's
// token memory has been told of.
func (s *Store) TokenChangesHeard() uint64 { return s.kept.reading() }
