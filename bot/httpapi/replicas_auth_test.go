package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/tokens"
)

// TestRevocationSeenAtOnceByAnotherReplica: two gateways, each with its own
// connection to one Redis. A token revoked through one is refused by the
// other on the very next call: nothing is cached.
func TestRevocationSeenAtOnceByAnotherReplica(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			rs := bottest.Start(t, backend)
			p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{bottest.NewPerson("alice").Identity()}}, Timeout: time.Minute}
			secret := tokens.NewSecret()
			var urls []string
			for range 2 {
				env := bottest.NewOn(t, rs.Client(t), rs.Prefix, p, nil)
				api := &httpapi.Server{Gateway: env.Gateway, Auth: &httpapi.Auth{Tokens: env.Store, Secret: secret, Require: true, Audit: env.Audit}}
				srv := httptest.NewServer(api.Handler())
				t.Cleanup(srv.Close)
				urls = append(urls, srv.URL)
			}
			a, b := urls[0], urls[1]
			// The first token, from loopback with none in the store, on replica A.
			status, _, raw := call(t, a, "POST", "/v1/tokens", "", `{"name":"admin","scopes":["admin"]}`)
			if status != 201 {
				t.Fatalf("first token: %d %s", status, raw)
			}
			var admin httpapi.CreatedToken
			json.Unmarshal([]byte(raw), &admin)
			status, _, raw = call(t, b, "POST", "/v1/tokens", admin.Token, `{"name":"agent","scopes":["read:requests"]}`)
			if status != 201 {
				t.Fatalf("agent token on B: %d %s", status, raw)
			}
			var agent httpapi.CreatedToken
			json.Unmarshal([]byte(raw), &agent)
			for _, u := range urls {
				if status, _, raw := call(t, u, "GET", "/v1/requests", agent.Token, ""); status != 200 {
					t.Fatalf("agent before revocation: %d %s", status, raw)
				}
			}
			if status, _, raw := call(t, a, "DELETE", "/v1/tokens/agent", admin.Token, ""); status != 200 {
				t.Fatalf("revoke on A: %d %s", status, raw)
			}
			if status, e, raw := call(t, b, "GET", "/v1/requests", agent.Token, ""); status != 401 || e.Error != "unknown or revoked token" {
				t.Errorf("B after revocation on A: %d %s, want 401 at once", status, raw)
			}
			// A second "first token" is refused: the store holds one.
			if status, _, raw := call(t, b, "POST", "/v1/tokens", "", `{"name":"sneaky","scopes":["admin"]}`); status != 401 {
				t.Errorf("a second token without one: %d %s", status, raw)
			}
			if ts, _ := bottest.NewOn(t, rs.Client(t), rs.Prefix, p, nil).Store.Tokens(context.Background()); len(ts) != 1 || ts[0].Name != "admin" {
				t.Errorf("tokens left: %v", ts)
			}
		})
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
	status, e, raw := f.call(t, "POST", "/v1/tokens", "", `{"name":"agent","scopes":["request"]}`)
	if status != 400 || e.Code != bot.EInvalid {
		t.Errorf("a first token without admin: %d %s", status, raw)
	}
	status, _, raw = f.call(t, "POST", "/v1/tokens", "", `{"name":"me","scopes":["admin"],"expires":"30d"}`)
	var out httpapi.CreatedToken
	json.Unmarshal([]byte(raw), &out)
	if status != 201 || out.Token == "" || out.Record.Expires.IsZero() {
		t.Fatalf("first admin token: %d %s", status, raw)
	}
	recs := auditRecords(t, f.env.AuditPath, "token")
	if len(recs) != 1 || recs[0]["action"] != "created" || recs[0]["by"] != "loopback, before any token existed" {
		t.Errorf("token audit: %v", recs)
	}
	if raw := mustJSON(recs); contains(raw, out.Token) || contains(raw, "hash") {
		t.Errorf("the audit holds the token or its hash: %s", raw)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
