package httpapi_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/tokens"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// replica is one gateway of a fleet on a shared Redis, following the
// token channel as serve does; cmds records what its store sends.
type replica struct {
	url   string
	store *qredis.Store
	cmds  *bottest.Commands
}

// fleetOwner owns the replicas' persona: her signed calls make tokens.
var fleetOwner = bottest.NewPerson("alice")

// replicas starts n gateways on one Redis, sharing a token secret, open
// on loopback until a token exists unless require.
func replicas(t *testing.T, rs *bottest.Server, n int, require bool) []replica {
	t.Helper()
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{fleetOwner.Identity()}}, Timeout: time.Minute}
	secret := tokens.NewSecret()
	var out []replica
	for range n {
		rdb := rs.Client(t)
		cmds := &bottest.Commands{}
		rdb.AddHook(cmds)
		env := bottest.NewOn(t, rdb, rs.Prefix, p, nil)
		api := &httpapi.Server{Gateway: env.Gateway, Auth: &httpapi.Auth{Tokens: env.Store, Secret: secret, Require: require, Audit: env.Audit, Owners: tokens.OwnersOf([]bot.Persona{p})}}
		srv := httptest.NewServer(api.Handler())
		t.Cleanup(srv.Close)
		followTokens(t, env.Store)
		out = append(out, replica{srv.URL, env.Store, cmds})
	}
	return out
}

// followTokens runs s.WatchTokens, as serve does, until the test ends,
// once it is subscribed.
func followTokens(t testing.TB, s *qredis.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	subscribed := make(chan struct{}, 8)
	done := make(chan struct{})
	go func() { defer close(done); s.WatchTokens(ctx, func() { subscribed <- struct{}{} }) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-subscribed:
	case <-time.After(10 * time.Second):
		t.Fatal("not subscribed to the token channel after 10s")
	}
}

// tokenReads is how many times r's store read a token or counted them.
func (r replica) tokenReads() int {
	return r.cmds.Count("HGETALL", "{tokens}") + r.cmds.Count("HLEN", "{tokens}")
}

// fromMemory waits until r answers GET /v1/requests with token (none:
// without one) reading no token from Redis: it remembers it, just now.
func (r replica) fromMemory(t *testing.T, token string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if status, _, raw := call(t, r.url, "GET", "/v1/requests", token, ""); status != 200 {
			t.Fatalf("GET /v1/requests: %d %s", status, raw)
		}
		r.cmds.Reset()
		if status, _, raw := call(t, r.url, "GET", "/v1/requests", token, ""); status != 200 {
			t.Fatalf("GET /v1/requests: %d %s", status, raw)
		}
		if r.tokenReads() == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("every call reads the token from Redis (%s)", r.cmds)
		}
	}
}

// refusedWithin polls r with token (none: without one) until it answers
// 401, and fails if that takes longer than d.
func (r replica) refusedWithin(t *testing.T, d time.Duration, token string) {
	t.Helper()
	start := time.Now()
	for {
		status, _, raw := call(t, r.url, "GET", "/v1/requests", token, "")
		if status == 401 {
			return
		}
		if status != 200 {
			t.Fatalf("GET /v1/requests: %d %s", status, raw)
		}
		if time.Since(start) > d {
			t.Fatalf("still let in %s after the change", d)
		}
		time.Sleep(time.Millisecond)
	}
}

// heardWithin is how soon a replica must act on a change another made:
// half of the store's bound on what it remembers, so only the change's
// message can make it.
const heardWithin = qredis.TokenMemoryFor / 2

// TestRevocationOnOneReplicaIsRefusedOnTheOthers: two gateways, each with
// its own connection to one Redis. B has just answered a token from
// memory (no read); it is revoked through A, and B refuses it as soon as
// the revocation's message reaches it.
func TestRevocationOnOneReplicaIsRefusedOnTheOthers(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			rs := bottest.Start(t, backend)
			reps := replicas(t, rs, 2, true)
			a, b := reps[0], reps[1]
			// The first token, made by the persona's owner, on replica A.
			status, _, raw := personCall(t, a.url, "POST", "/v1/tokens", fleetOwner.Key, `{"name":"admin","scopes":["admin"]}`, nil)
			if status != 201 {
				t.Fatalf("first token: %d %s", status, raw)
			}
			var admin httpapi.CreatedToken
			json.Unmarshal([]byte(raw), &admin)
			status, _, raw = call(t, b.url, "POST", "/v1/tokens", admin.Token, `{"name":"agent","scopes":["read:requests"]}`)
			if status != 201 {
				t.Fatalf("agent token on B: %d %s", status, raw)
			}
			var agent httpapi.CreatedToken
			json.Unmarshal([]byte(raw), &agent)
			a.fromMemory(t, agent.Token)
			b.fromMemory(t, agent.Token)
			if status, _, raw := call(t, a.url, "DELETE", "/v1/tokens/agent", admin.Token, ""); status != 200 {
				t.Fatalf("revoke on A: %d %s", status, raw)
			}
			b.refusedWithin(t, heardWithin, agent.Token)
			if status, e, raw := call(t, b.url, "GET", "/v1/requests", agent.Token, ""); status != 401 || e.Error != "unknown or revoked token" {
				t.Errorf("B after revocation on A: %d %s", status, raw)
			}
			// A second "first token" is refused: the store holds one.
			if status, _, raw := call(t, b.url, "POST", "/v1/tokens", "", `{"name":"sneaky","scopes":["admin"]}`); status != 401 {
				t.Errorf("a second token without one: %d %s", status, raw)
			}
			if ts, _ := a.store.Tokens(context.Background()); len(ts) != 1 || ts[0].Name != "admin" {
				t.Errorf("tokens left: %v", tokenNames(ts))
			}
		})
	}
}

// TestFirstTokenClosesEveryReplica: the API is open on loopback while no
// token exists, and B has just answered a call without one from memory
// (no count of the tokens read). The first token is made through replica
// A, or on the store by `SIGNOFF_REDIS_URL=… signoff tokens create` (the
// same store code, no gateway); B refuses calls without a token as soon
// as the message reaches it.
func TestFirstTokenClosesEveryReplica(t *testing.T) {
	for _, backend := range bottest.Backends() {
		for _, through := range []string{"replica A", "the store"} {
			t.Run(backend+"/"+through, func(t *testing.T) {
				rs := bottest.Start(t, backend)
				reps := replicas(t, rs, 2, false)
				a, b := reps[0], reps[1]
				a.fromMemory(t, "")
				b.fromMemory(t, "")
				if through == "replica A" {
					if status, _, raw := personCall(t, a.url, "POST", "/v1/tokens", fleetOwner.Key, `{"name":"me","scopes":["admin"]}`, nil); status != 201 {
						t.Fatalf("first token on A: %d %s", status, raw)
					}
				} else {
					_, tok, _ := tokens.New(tokens.NewSecret(), tokens.Spec{Name: "me", Scopes: []tokens.Scope{tokens.Admin}}, time.Now())
					if err := rs.Store(t).CreateToken(context.Background(), tok); err != nil {
						t.Fatal(err)
					}
				}
				b.refusedWithin(t, heardWithin, "")
				a.refusedWithin(t, heardWithin, "")
			})
		}
	}
}

// TestAgentCannotMintASecondFirstTokenDuringARollingUpgrade: a replica
// (or `signoff tokens`) of the version before the token channel makes the
// first token and tells no one; replica B, which remembers that none
// exists, may stay open for up to the store's bound, but an agent on
// loopback asking it for the "first" admin token then is refused: that
// token is made only if none exists, checked in the same step.
func TestAgentCannotMintASecondFirstTokenDuringARollingUpgrade(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			rs := bottest.Start(t, backend)
			b := replicas(t, rs, 1, false)[0]
			b.fromMemory(t, "")
			oldVersionCreatesToken(t, rs, "me")
			status, _, raw := call(t, b.url, "POST", "/v1/tokens", "", `{"name":"agent-admin","scopes":["admin"]}`)
			if status == 201 {
				t.Errorf("the agent minted itself an admin token beside the person's: %s", raw)
			} else if status != 401 {
				t.Errorf("a second first token: %d %s, want 401", status, raw)
			}
			if ts, _ := b.store.Tokens(context.Background()); len(ts) != 1 || ts[0].Name != "me" {
				t.Errorf("tokens: %v", tokenNames(ts))
			}
			b.refusedWithin(t, qredis.TokenMemoryFor+time.Second, "")
		})
	}
}

// oldVersionCreatesToken makes a token as the version before the token
// channel did: its script, nothing published.
func oldVersionCreatesToken(t *testing.T, rs *bottest.Server, name string) {
	t.Helper()
	_, tok, _ := tokens.New(tokens.NewSecret(), tokens.Spec{Name: name, Scopes: []tokens.Scope{tokens.Admin}}, time.Now())
	rec, _ := json.Marshal(tok)
	var m map[string]any
	json.Unmarshal(rec, &m)
	m["hash"] = hex.EncodeToString(tok.Hash)
	rec, _ = json.Marshal(m)
	const script = `
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[2], 'rec', ARGV[3])
return 1
`
	keys := []string{rs.Prefix + ":{tokens}:names", rs.Prefix + ":{tokens}:t:" + tok.ID}
	if err := rs.Client(t).Eval(context.Background(), script, keys, name, tok.ID, rec).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := rs.Store(t).Token(context.Background(), tok.ID); err != nil || got.Name != name {
		t.Fatalf("the old version's token reads as %+v, %v", got, err)
	}
}

// TestAgentWithATokenCannotMintAnAdminToken: an agent holding a request
// token, on the same machine (loopback), tries the first-token path and
// its own token to make itself an admin token.
func TestAgentWithATokenCannotMintAnAdminToken(t *testing.T) {
	f := authSetup(t)
	agent := f.mint(t, tokens.Spec{Name: "agent", Scopes: []tokens.Scope{tokens.Request}})
	for name, tok := range map[string]string{"without a token": "", "with its own": agent} {
		status, _, raw := f.call(t, "POST", "/v1/tokens", tok, `{"name":"root","scopes":["admin"]}`)
		if status != 401 && status != 403 {
			t.Errorf("%s: %d %s, want 401 or 403", name, status, raw)
		}
	}
	if ts, _ := f.env.Store.Tokens(context.Background()); len(ts) != 1 {
		t.Errorf("%d tokens, want only the agent's", len(ts))
	}
}

func TestFirstTokenMustCarryAdmin(t *testing.T) {
	f := authSetup(t)
	status, e, raw := personCall(t, f.srv.URL, "POST", "/v1/tokens", f.alice.Key, `{"name":"agent","scopes":["request"]}`, nil)
	if status != 400 || e.Code != bot.EInvalid {
		t.Errorf("a first token without admin: %d %s", status, raw)
	}
	status, _, raw = personCall(t, f.srv.URL, "POST", "/v1/tokens", f.alice.Key, `{"name":"me","scopes":["admin"],"expires":"30d"}`, nil)
	var out httpapi.CreatedToken
	json.Unmarshal([]byte(raw), &out)
	if status != 201 || out.Token == "" || out.Record.Expires.IsZero() {
		t.Fatalf("first admin token: %d %s", status, raw)
	}
	recs := auditRecords(t, f.env.AuditPath, "token")
	if len(recs) != 1 || recs[0]["action"] != "created" || recs[0]["by"] != f.alice.Key.Npub()+" (owner of persona demo, NIP-98)" {
		t.Errorf("token audit: %v", recs)
	}
	if raw := mustJSON(recs); contains(raw, out.Token) || contains(raw, "hash") {
		t.Errorf("the audit holds the token or its hash: %s", raw)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func tokenNames(ts []*tokens.Token) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}
