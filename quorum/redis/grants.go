package redis

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/grants"
)

// Grants live in Redis only: the grant document and its use counter share
// the grant's {id} hash tag (one slot, so the scripts run on Cluster) and
// expire with it; an index ordered by expiry lists them. Every check reads
// them here, so a revocation holds at once on every replica.

var _ grants.Store = (*Store)(nil)

func (s *Store) grantKeys(id string) []string {
	t := "{" + id + "}"
	return []string{s.key("grant", t), s.key("grant", t, "uses")}
}

// useGrantScript counts a use only while the grant exists.
var useGrantScript = goredis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local n = redis.call('INCR', KEYS[2])
redis.call('PEXPIREAT', KEYS[2], redis.call('HGET', KEYS[1], 'expires'))
return n
`)

// revokeGrantScript removes a grant and returns it with its uses. A
// grant's id is its request's, so the request's hash (KEYS[3], the same
// slot) is marked: the outbox never makes a revoked grant again.
var revokeGrantScript = goredis.NewScript(`
local doc = redis.call('HGET', KEYS[1], 'doc')
if not doc then return false end
local uses = redis.call('GET', KEYS[2]) or '0'
redis.call('DEL', KEYS[1], KEYS[2])
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('HSET', KEYS[3], 'done:grant', '1') end
return {doc, uses}
`)

// PutGrant stores g until it expires; false when its id is taken.
func (s *Store) PutGrant(ctx context.Context, g grants.Grant) (bool, error) {
	doc, err := json.Marshal(g)
	if err != nil {
		return false, err
	}
	k := s.grantKeys(g.ID)
	ok, err := s.rdb.HSetNX(ctx, k[0], "doc", doc).Result()
	if err != nil {
		return false, unavailable("put grant", err)
	}
	if !ok {
		return false, nil
	}
	if _, err := s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		pl.HSet(ctx, k[0], "expires", g.Expires.UnixMilli())
		pl.PExpireAt(ctx, k[0], g.Expires)
		return nil
	}); err != nil {
		s.rdb.Del(ctx, k[0])
		return false, unavailable("put grant", err)
	}
	if err := s.rdb.ZAdd(ctx, s.key("grants"), goredis.Z{Score: float64(g.Expires.UnixMilli()), Member: g.ID}).Err(); err != nil {
		s.rdb.Del(ctx, k[0])
		return false, unavailable("index grant", err)
	}
	return true, nil
}

// Grants returns the live grants of persona ("" for every persona).
func (s *Store) Grants(ctx context.Context, persona string, now time.Time) ([]grants.Grant, error) {
	idx := s.key("grants")
	s.rdb.ZRemRangeByScore(ctx, idx, "-inf", strconv.FormatInt(now.UnixMilli(), 10))
	ids, err := s.rdb.ZRangeByScore(ctx, idx, &goredis.ZRangeBy{Min: "(" + strconv.FormatInt(now.UnixMilli(), 10), Max: "+inf", Count: 10000}).Result()
	if err != nil {
		return nil, unavailable("list grants", err)
	}
	docs := make([]*goredis.StringCmd, len(ids))
	uses := make([]*goredis.StringCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		for i, id := range ids {
			k := s.grantKeys(id)
			docs[i], uses[i] = pl.HGet(ctx, k[0], "doc"), pl.Get(ctx, k[1])
		}
		return nil
	}); err != nil && !errors.Is(err, goredis.Nil) {
		return nil, unavailable("get grants", err)
	}
	out := []grants.Grant{}
	for i, id := range ids {
		var g grants.Grant
		b, err := docs[i].Bytes()
		if err != nil || json.Unmarshal(b, &g) != nil {
			s.rdb.ZRem(ctx, idx, id) // revoked (or unreadable): gone
			continue
		}
		if !g.Expires.After(now) || (persona != "" && g.Persona != persona) {
			continue
		}
		g.Uses, _ = uses[i].Int64()
		out = append(out, g)
	}
	return out, nil
}

// UseGrant counts one use; false when the grant no longer exists.
func (s *Store) UseGrant(ctx context.Context, id string) (bool, error) {
	n, err := useGrantScript.Run(ctx, s.rdb, s.grantKeys(id)).Int64()
	if err != nil {
		return false, unavailable("use grant", err)
	}
	return n > 0, nil
}

// RevokeGrant removes a grant at once and returns it.
func (s *Store) RevokeGrant(ctx context.Context, id string) (grants.Grant, error) {
	res, err := revokeGrantScript.Run(ctx, s.rdb, append(s.grantKeys(id), s.requestKeys(id)[0])).Slice()
	if errors.Is(err, goredis.Nil) {
		return grants.Grant{}, bot.Errorf(bot.ENotFound, "no live grant %q (see `signoff grants`)", id)
	}
	if err != nil {
		return grants.Grant{}, unavailable("revoke grant", err)
	}
	s.rdb.ZRem(ctx, s.key("grants"), id)
	var g grants.Grant
	doc, _ := res[0].(string)
	if err := json.Unmarshal([]byte(doc), &g); err != nil {
		return grants.Grant{}, bot.Errorf(bot.EInternal, "decode grant %s: %v", id, err)
	}
	if u, ok := res[1].(string); ok {
		g.Uses, _ = strconv.ParseInt(u, 10, 64)
	}
	return g, nil
}
