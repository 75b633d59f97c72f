package redis

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/tokens"
)

// Tokens are kept hashed (tokens.Secret.Hash), one Redis hash per token
// plus a name → id index, all under the {tokens} hash tag so the scripts
// run on Cluster.
//
// A replica answers Token and HasTokens from what it read before (memory,
// below) only while it follows the token channel (WatchTokens): the
// scripts that create or revoke a token publish its id there in the same
// step, so a change reaches every subscribed replica, which drops what it
// changes. A (re)subscription drops everything (what was published while
// it was down is lost), and with no subscription every call reads Redis.
// What is not announced — a change made by a version before the channel
// (a rolling upgrade), a FLUSHALL or hand edit, a subscription lost
// without go-redis noticing yet — holds at the latest after
// TokenMemoryFor, when a remembered answer is read again.

func (s *Store) tokenKey(id string) string { return s.key("{tokens}", "t", id) }
func (s *Store) tokenNames() string        { return s.key("{tokens}", "names") }
func (s *Store) tokenSecret() string       { return s.key("{tokens}", "secret") }
func (s *Store) tokensClosed() string      { return s.key("{tokens}", "closed") }

// TokenChannel is where every token created or revoked is published, its
// id as the message, by the script that does it.
func (s *Store) TokenChannel() string { return s.key("tokens", "changed") }

// tokenRecord is the stored form: the token's JSON minus its hash.
type tokenRecord struct {
	tokens.Token
	Hash string `json:"hash"`
}

// createTokenScript adds a token unless its name is taken, or, with
// ARGV[5] "first", unless any token exists (it returns -1 then), sets the
// closed mark (tokens exist or existed) and publishes its id on the token
// channel.
// KEYS: 1 names index, 2 token hash, 3 closed mark. ARGV: 1 name, 2 id,
// 3 record JSON, 4 token channel, 5 "first" or "".
var createTokenScript = goredis.NewScript(`
if ARGV[5] == 'first' and redis.call('HLEN', KEYS[1]) > 0 then return -1 end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[2], 'rec', ARGV[3])
redis.call('SET', KEYS[3], '1')
redis.call('PUBLISH', ARGV[4], ARGV[2])
return 1
`)

// revokeTokenScript removes the token called ARGV[1] if its id is still
// ARGV[2], and publishes the id on the token channel ARGV[3].
// KEYS: 1 names index, 2 token hash. Returns 1 when removed.
var revokeTokenScript = goredis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[3], ARGV[2])
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
	return s.createToken(ctx, t, "")
}

// CreateFirstToken stores t only if no token exists, in one step: the
// first token, made without one, cannot be a second. EUnauthorized when
// a token exists.
func (s *Store) CreateFirstToken(ctx context.Context, t *tokens.Token) error {
	return s.createToken(ctx, t, "first")
}

func (s *Store) createToken(ctx context.Context, t *tokens.Token, first string) error {
	b, err := json.Marshal(tokenRecord{Token: *t, Hash: hex.EncodeToString(t.Hash)})
	if err != nil {
		return err
	}
	n, err := createTokenScript.Run(ctx, s.rdb, []string{s.tokenNames(), s.tokenKey(t.ID), s.tokensClosed()}, t.Name, t.ID, b, s.TokenChannel(), first).Int()
	if err != nil {
		return unavailable("create token", err)
	}
	switch n {
	case 0:
		return bot.Errorf(bot.EConflict, "a token named %q already exists (revoke it first: signoff tokens revoke %s)", t.Name, t.Name)
	case -1:
		return tokens.ErrNoToken
	}
	s.kept.forget(t.ID) // this replica need not wait for its own message
	return nil
}

// Token returns the token with id, or ENotFound.
func (s *Store) Token(ctx context.Context, id string) (*tokens.Token, error) {
	now := time.Now()
	if t, ok := s.kept.token(id, now); ok {
		return t, nil
	}
	gen := s.kept.reading()
	m, err := s.rdb.HGetAll(ctx, s.tokenKey(id)).Result()
	if err != nil {
		return nil, unavailable("read token", err)
	}
	t, err := decodeToken(m)
	if err == nil {
		s.kept.keep(gen, id, t, now)
	} else {
		s.kept.keep(gen, id, nil, now)
	}
	return t, err
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
	n, err := revokeTokenScript.Run(ctx, s.rdb, []string{s.tokenNames(), s.tokenKey(id)}, name, id, s.TokenChannel()).Int()
	if err != nil {
		return nil, unavailable("revoke token", err)
	}
	if n == 0 {
		return nil, bot.Errorf(bot.EConflict, "token %q changed while revoking it; run the command again", name)
	}
	s.kept.forget(id)
	if t == nil {
		t = &tokens.Token{ID: id, Name: name}
	}
	return t, nil
}

// HasTokens reports whether any token exists.
func (s *Store) HasTokens(ctx context.Context) (bool, error) {
	now := time.Now()
	if any, ok := s.kept.hasTokens(now); ok {
		return any, nil
	}
	gen := s.kept.reading()
	n, err := s.rdb.HLen(ctx, s.tokenNames()).Result()
	if err != nil {
		return false, unavailable("count tokens", err)
	}
	s.kept.keepHas(gen, n > 0, now)
	return n > 0, nil
}

// TouchToken records the token's last use. It announces nothing (a use
// changes no answer); what this replica remembers of the token is updated.
func (s *Store) TouchToken(ctx context.Context, id string, at time.Time) error {
	if err := touchTokenScript.Run(ctx, s.rdb, []string{s.tokenKey(id)}, at.UnixMilli()).Err(); err != nil && err != goredis.Nil {
		return unavailable("touch token", err)
	}
	s.kept.touched(id, at)
	return nil
}

// TokensClosed reports the closed mark: a token was made on this store
// (a FLUSHALL or a restart without persistence takes it with the rest).
func (s *Store) TokensClosed(ctx context.Context) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.tokensClosed()).Result()
	if err != nil {
		return false, unavailable("tokens closed", err)
	}
	return n == 1, nil
}

// MarkTokensClosed sets the closed mark.
func (s *Store) MarkTokensClosed(ctx context.Context) error {
	if err := s.rdb.Set(ctx, s.tokensClosed(), "1", 0).Err(); err != nil {
		return unavailable("mark tokens closed", err)
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

// WatchTokens follows the token channel until ctx ends or the
// subscription closes. While it does, Token and HasTokens answer from
// memory what they read (for up to TokenMemoryFor), and each change heard
// drops the token it names and HasTokens' answer. Everything remembered is
// dropped as the subscription is made, at each resubscription go-redis
// makes after a reconnect (messages sent meanwhile are lost), and as it
// ends. subscribed, when not nil, is called after each (re)subscription.
func (s *Store) WatchTokens(ctx context.Context, subscribed func()) error {
	on := false
	defer func() {
		if on {
			s.kept.ended()
		}
	}()
	return follow(ctx, s.rdb.Subscribe(ctx, s.TokenChannel()), "tokens", 256,
		func(m *goredis.Message) { s.kept.forget(m.Payload) },
		func(*goredis.Subscription) {
			s.kept.subscribed(!on)
			on = true
			if subscribed != nil {
				subscribed()
			}
		})
}

// TokenMemoryFor is how long a token, or HasTokens' answer, read from
// Redis is answered from memory before it is read again. Every change made
// by this version is announced and drops it at once; this bound is for
// what is not: during a rolling upgrade, a token revoked through a replica
// (or a `signoff tokens` CLI) of a version before the token channel stays
// valid on a replica that remembered it for up to this long, and a first
// token made so closes open mode on it as late (the first token made
// without one is still made only if none exists: CreateFirstToken); so do
// a FLUSHALL, a hand edit, and a subscription lost before go-redis notices
// (a peer gone silent). Short, as the egress proxy's 2 s belief in a
// token's record (docs/guide.md, tokens), and long enough that the read it costs, one per
// token and replica every 2 s, is nothing.
const TokenMemoryFor = 2 * time.Second

// maxTokensKept bounds the tokens remembered. Only tokens that exist are
// (an unknown id is read every time, as a bad token is rate-limited), so
// this is reached only by a store with that many tokens in use.
const maxTokensKept = 4096

// tokenMemory is what Token and HasTokens read, kept while a subscription
// to the token channel says when it changes (see the comment at the top).
type tokenMemory struct {
	mu        sync.RWMutex
	following int    // WatchTokens subscribed now; 0: nothing is answered or kept
	gen       uint64 // bumped by each change heard, (re)subscription and end
	byID      map[string]keptToken
	has       keptHas
	// keepFor is TokenMemoryFor but in tests (0 also means TokenMemoryFor).
	keepFor time.Duration
}

type keptToken struct {
	t  tokens.Token
	at time.Time // when the read it came from began
}

type keptHas struct {
	known, any bool
	at         time.Time
}

func (m *tokenMemory) fresh(at, now time.Time) bool {
	d := m.keepFor
	if d == 0 {
		d = TokenMemoryFor
	}
	return now.Sub(at) < d
}

// token returns a copy of the token with id, if it is remembered.
func (m *tokenMemory) token(id string, now time.Time) (*tokens.Token, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.following == 0 {
		return nil, false
	}
	e, ok := m.byID[id]
	if !ok || !m.fresh(e.at, now) {
		return nil, false
	}
	t := e.t
	return &t, true
}

func (m *tokenMemory) hasTokens(now time.Time) (any, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.following == 0 || !m.has.known || !m.fresh(m.has.at, now) {
		return false, false
	}
	return m.has.any, true
}

// reading is called before a read from Redis; what it returns is passed
// to keep, which keeps the read only if nothing was heard meanwhile (a
// change announced after the read began may have come before its answer).
func (m *tokenMemory) reading() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.gen
}

// keep remembers t (nil: the token is gone) as read at at.
func (m *tokenMemory) keep(gen uint64, id string, t *tokens.Token, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t == nil {
		delete(m.byID, id)
		return
	}
	if m.following == 0 || gen != m.gen {
		return
	}
	if _, ok := m.byID[id]; !ok && len(m.byID) >= maxTokensKept {
		for k := range m.byID { // any one
			delete(m.byID, k)
			break
		}
	}
	if m.byID == nil {
		m.byID = map[string]keptToken{}
	}
	m.byID[id] = keptToken{t: *t, at: at}
}

func (m *tokenMemory) keepHas(gen uint64, any bool, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.following == 0 || gen != m.gen {
		return
	}
	m.has = keptHas{known: true, any: any, at: at}
}

// touched sets a remembered token's last use, which no message announces.
func (m *tokenMemory) touched(id string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.byID[id]; ok {
		e.t.LastUsed = at.UTC()
		m.byID[id] = e
	}
}

// forget drops the token with id ("": every token) and HasTokens' answer:
// a token was made or removed.
func (m *tokenMemory) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.has = keptHas{}
	if id == "" {
		clear(m.byID)
	} else {
		delete(m.byID, id)
	}
}

// subscribed is a (re)subscription (first: a watch's first one): what was
// published before it may have been missed.
func (m *tokenMemory) subscribed(first bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if first {
		m.following++
	}
	m.dropLocked()
}

// ended is a watch's end: it no longer hears the changes.
func (m *tokenMemory) ended() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.following--
	m.dropLocked()
}

func (m *tokenMemory) dropLocked() {
	m.gen++
	m.has = keptHas{}
	clear(m.byID)
}

// OwnerOf returns a stored persona that pubkey (hex) owns: how `signoff
// tokens` on the store checks that the person who signs is an owner of a
// persona the gateway loaded (tokens.Owners).
func (s *Store) OwnerOf(ctx context.Context, pubkey string) (string, bool, error) {
	names, err := s.rdb.SMembers(ctx, s.key("personas")).Result()
	if err != nil {
		return "", false, unavailable("list personas", err)
	}
	sort.Strings(names)
	for _, n := range names {
		p, err := s.Persona(ctx, n)
		if err != nil {
			continue
		}
		if name, ok, _ := tokens.OwnersOf([]bot.Persona{p}).OwnerOf(ctx, pubkey); ok {
			return name, true, nil
		}
	}
	return "", false, nil
}
