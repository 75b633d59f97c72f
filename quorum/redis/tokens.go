package redis

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/tokens"
)

// Tokens are kept hashed (tokens.Secret.Hash), one Redis hash per token
// plus a name → id index, all under the {tokens} hash tag so the scripts
// run on Cluster. Nothing here is cached in the process: every replica
// reads the record on every call, so a revocation holds at once everywhere.

func (s *Store) tokenKey(id string) string { return s.key("{tokens}", "t", id) }
func (s *Store) tokenNames() string        { return s.key("{tokens}", "names") }
func (s *Store) tokenSecret() string       { return s.key("{tokens}", "secret") }

// tokenRecord is the stored form: the token's JSON minus its hash.
type tokenRecord struct {
	tokens.Token
	Hash string `json:"hash"`
}

// createTokenScript adds a token unless its name is taken.
// KEYS: 1 names index, 2 token hash. ARGV: 1 name, 2 id, 3 record JSON.
var createTokenScript = goredis.NewScript(`
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[2], 'rec', ARGV[3])
return 1
`)

// revokeTokenScript removes the token called ARGV[1] if its id is still ARGV[2].
// KEYS: 1 names index, 2 token hash. Returns 1 when removed.
var revokeTokenScript = goredis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
return 1
`)

// touchTokenScript records a use without resurrecting a revoked token.
// KEYS: 1 token hash. ARGV: 1 unix ms.
var touchTokenScript = goredis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'last_used', ARGV[1]) end
return 0
`)

// CreateToken stores t; a name already in use is a conflict.
func (s *Store) CreateToken(ctx context.Context, t *tokens.Token) error {
	b, err := json.Marshal(tokenRecord{Token: *t, Hash: hex.EncodeToString(t.Hash)})
	if err != nil {
		return err
	}
	n, err := createTokenScript.Run(ctx, s.rdb, []string{s.tokenNames(), s.tokenKey(t.ID)}, t.Name, t.ID, b).Int()
	if err != nil {
		return unavailable("create token", err)
	}
	if n == 0 {
		return bot.Errorf(bot.EConflict, "a token named %q already exists (revoke it first: signoff tokens revoke %s)", t.Name, t.Name)
	}
	return nil
}

// Token returns the token with id, or ENotFound.
func (s *Store) Token(ctx context.Context, id string) (*tokens.Token, error) {
	m, err := s.rdb.HGetAll(ctx, s.tokenKey(id)).Result()
	if err != nil {
		return nil, unavailable("read token", err)
	}
	return decodeToken(m)
}

func decodeToken(m map[string]string) (*tokens.Token, error) {
	raw, ok := m["rec"]
	if !ok {
		return nil, bot.Errorf(bot.ENotFound, "no such token")
	}
	var rec tokenRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return nil, bot.Errorf(bot.EInternal, "stored token is not valid JSON: %v", err)
	}
	t := rec.Token
	t.Hash, _ = hex.DecodeString(rec.Hash)
	if ms, err := strconv.ParseInt(m["last_used"], 10, 64); err == nil {
		t.LastUsed = time.UnixMilli(ms).UTC()
	}
	return &t, nil
}

// Tokens lists every token, by name.
func (s *Store) Tokens(ctx context.Context) ([]*tokens.Token, error) {
	names, err := s.rdb.HGetAll(ctx, s.tokenNames()).Result()
	if err != nil {
		return nil, unavailable("list tokens", err)
	}
	cmds := map[string]*goredis.MapStringStringCmd{}
	_, err = s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for name, id := range names {
			cmds[name] = p.HGetAll(ctx, s.tokenKey(id))
		}
		return nil
	})
	if err != nil {
		return nil, unavailable("list tokens", err)
	}
	var out []*tokens.Token
	for _, c := range cmds {
		if t, err := decodeToken(c.Val()); err == nil {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// RevokeToken removes the token called name at once; ENotFound when none.
func (s *Store) RevokeToken(ctx context.Context, name string) (*tokens.Token, error) {
	id, err := s.rdb.HGet(ctx, s.tokenNames(), name).Result()
	if err == goredis.Nil {
		return nil, bot.Errorf(bot.ENotFound, "no token named %q", name)
	}
	if err != nil {
		return nil, unavailable("revoke token", err)
	}
	t, _ := s.Token(ctx, id)
	n, err := revokeTokenScript.Run(ctx, s.rdb, []string{s.tokenNames(), s.tokenKey(id)}, name, id).Int()
	if err != nil {
		return nil, unavailable("revoke token", err)
	}
	if n == 0 {
		return nil, bot.Errorf(bot.EConflict, "token %q changed while revoking it; run the command again", name)
	}
	if t == nil {
		t = &tokens.Token{ID: id, Name: name}
	}
	return t, nil
}

// HasTokens reports whether any token exists.
func (s *Store) HasTokens(ctx context.Context) (bool, error) {
	n, err := s.rdb.HLen(ctx, s.tokenNames()).Result()
	if err != nil {
		return false, unavailable("count tokens", err)
	}
	return n > 0, nil
}

// TouchToken records the token's last use.
func (s *Store) TouchToken(ctx context.Context, id string, at time.Time) error {
	if err := touchTokenScript.Run(ctx, s.rdb, []string{s.tokenKey(id)}, at.UnixMilli()).Err(); err != nil && err != goredis.Nil {
		return unavailable("touch token", err)
	}
	return nil
}

// TokenSecretFingerprint stores fp as the fingerprint of the secret the
// tokens are hashed with, unless one is stored (fp "" only reads); it
// returns the stored one.
// A replica whose secret's fingerprint differs would refuse every token.
func (s *Store) TokenSecretFingerprint(ctx context.Context, fp string) (string, error) {
	if fp != "" {
		if err := s.rdb.SetNX(ctx, s.tokenSecret(), fp, 0).Err(); err != nil {
			return "", unavailable("token secret", err)
		}
	}
	got, err := s.rdb.Get(ctx, s.tokenSecret()).Result()
	if err == goredis.Nil {
		return "", nil
	}
	if err != nil {
		return "", unavailable("token secret", err)
	}
	return got, nil
}
