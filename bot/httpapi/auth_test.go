package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/console"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/netpolicy"
	"github.com/signoff/signoff/bot/permissions"
	"github.com/signoff/signoff/bot/risk"
	"github.com/signoff/signoff/bot/tokens"
)

// wantAccess is who may call each route: the scope table of docs/guide.md. A route
// added to the API without a row here fails TestEveryRouteHasAccess, so
// none slips in unscoped. Token routes list their scopes comma-separated
// (any one suffices).
var wantAccess = map[string]string{
	"POST /v1/requests":               "request",
	"GET /v1/requests":                "read:requests",
	"GET /v1/requests/{id}":           "request,check,read:requests",
	"POST /v1/requests/{id}/withdraw": "request",
	"POST /v1/actions":                "request,check",
	"POST /v1/nostr/events":           "signed body",
	"GET /healthz":                    "public",
	"GET /readyz":                     "public",
	"GET /metrics":                    "public",
	"POST /slack/events":              "signed body",
	"POST /slack/interactions":        "signed body",
	"POST /discord/interactions":      "signed body",
	"POST /v1/tokens":                 "admin",
	"GET /v1/tokens":                  "admin",
	"DELETE /v1/tokens/{name}":        "admin",

	"POST /v1/network/requests":              "net:request",
	"POST /v1/network/drafts":                "net:request",
	"GET /v1/network/requests":               "net:request,admin",
	"POST /v1/network/requests/{id}/approve": "admin",
	"POST /v1/network/requests/{id}/deny":    "admin",
	"GET /v1/network/policy":                 "net:request,admin",
	"POST /v1/classify":                      "classify",
	"POST /v1/publish":                       "publish",
	"GET /v1/tokens/self":                    "request,check,read:requests,classify,net:request,publish,admin",

	"POST /v1/check":         "check",
	"GET /v1/grants":         "admin",
	"DELETE /v1/grants/{id}": "admin",

	"GET /console/":                         "public",
	"GET /console":                          "public",
	"GET /v1/console/feed":                  "read:requests",
	"GET /v1/console/audit":                 "read:requests",
	"GET /v1/console/audit/{id}":            "read:requests",
	"GET /v1/console/network/{id}/preview":  "admin",
	"POST /v1/console/network/{id}/approve": "admin",
	"GET /v1/console/network/revisions":     "admin",
}

type authFixture struct {
	alice bottest.Person // owns the personas: her signed calls are a person's
	env   *bottest.Env
	api   *httpapi.Server
	srv   *httptest.Server
	clock time.Time
	// metrics has the gateway's series; the server counts its 429s there.
	metrics *prometheus.Registry
}

// authSetup serves the API with tokens on the real store, personas demo
// and other, and every platform route mounted.
func authSetup(t testing.TB) *authFixture {
	t.Helper()
	alice := bottest.NewPerson("alice")
	persona := func(name string) bot.Persona {
		return bot.Persona{Name: name, Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, Timeout: time.Minute}
	}
	env := bottest.New(t, persona("demo"), nil)
	if err := env.Store.PutPersona(context.Background(), persona("other")); err != nil {
		t.Fatal(err)
	}
	env.Gateway.Classifier = risk.Default()
	f := &authFixture{env: env, alice: alice}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	netsvc := &netpolicy.Service{Gateway: env.Gateway, Store: env.Store, Decisions: env.Store.WatchFinal, Audit: env.Audit, Logger: quiet}
	if err := netsvc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(netsvc.Close)
	if _, err := netsvc.Seed(context.Background(), "policy.yaml", []byte("hosts: []\n")); err != nil {
		t.Fatal(err)
	}
	// Every dependency is set, so every route the server can have is
	// walked (TestWalkFixtureSetsEveryDependency keeps it so); the rate
	// limit is serve's default.
	limit, err := httpapi.NewRateLimit(httpapi.DefaultRate, httpapi.DefaultBurst)
	if err != nil {
		t.Fatal(err)
	}
	f.metrics = prometheus.NewRegistry()
	metrics := bot.NewMetrics(f.metrics)
	f.api = &httpapi.Server{
		Gateway: env.Gateway, Ready: env.Store.Ping, Metrics: ok,
		Extra:        map[string]http.Handler{"POST /slack/events": ok, "POST /slack/interactions": ok, "POST /discord/interactions": ok},
		Auth:         &httpapi.Auth{Tokens: env.Store, Secret: tokens.NewSecret(), Audit: env.Audit, Owners: tokens.OwnersOf([]bot.Persona{persona("demo"), persona("other")}), Logger: quiet},
		Network:      netsvc,
		Classifier:   risk.Default(),
		Logger:       quiet,
		Now:          time.Now,
		Checker:      &permissions.Checker{Personas: env.Store, Classifier: risk.Default(), Grants: env.Store, Audit: env.Audit, Requests: env.Gateway},
		AllowedHosts: []string{"signoff", "gateway.internal:8443"},
		Limit:        limit,
		Console: &httpapi.Console{
			Feed:       &console.Feed{Get: env.Gateway.Get, Follow: console.FollowAll(env.Store.WatchCreated, env.Store.Watch), Logger: quiet},
			GatewayKey: env.Gateway.Signer.PublicKey(),
			Audit:      &console.AuditFile{Path: filepath.Join(t.TempDir(), "audit.jsonl")},
			PolicyFile: filepath.Join(t.TempDir(), "policy.yaml"),
		},

		OnRateLimited: metrics.RateLimited,
		OnCheck:       metrics.Checked,
		ObserveRoute:  metrics.ObserveHTTP,
	}
	f.srv = httptest.NewServer(f.api.Handler())
	t.Cleanup(f.srv.Close)
	t.Cleanup(f.api.Console.Feed.Close)
	followTokens(t, env.Store) // as serve does
	return f
}

// mint creates a token on the store and returns it.
func (f *authFixture) mint(t testing.TB, spec tokens.Spec) string {
	t.Helper()
	plain, tok, err := tokens.New(f.api.Auth.Secret, spec, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.env.Store.CreateToken(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	return plain
}

func (f *authFixture) call(t *testing.T, method, path, token, body string) (int, httpapi.ErrorBody, string) {
	t.Helper()
	return call(t, f.srv.URL, method, path, token, body)
}

func call(t *testing.T, base, method, path, token, body string) (int, httpapi.ErrorBody, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	json.NewDecoder(resp.Body).Decode(&raw)
	var e httpapi.ErrorBody
	json.Unmarshal(raw, &e)
	return resp.StatusCode, e, string(raw)
}

// probe turns a route pattern into a method and a path to call.
func probe(pattern string) (string, string) {
	method, path, _ := strings.Cut(pattern, " ")
	for strings.Contains(path, "{") {
		i, j := strings.Index(path, "{"), strings.Index(path, "}")
		path = path[:i] + "probe" + path[j+1:]
	}
	return method, path
}

func TestEveryRouteHasAccess(t *testing.T) {
	f := authSetup(t)
	routes := f.api.Routes()
	if len(routes) < len(wantAccess) {
		t.Errorf("%d routes, want at least the %d of the table", len(routes), len(wantAccess))
	}
	for _, r := range routes {
		want, ok := wantAccess[r.Pattern]
		if !ok {
			t.Errorf("route %q (access %s) is not in wantAccess: add its row here and to the scope table in docs/guide.md", r.Pattern, r.Access)
			continue
		}
		if got := r.Access.String(); got != want {
			t.Errorf("route %q: access %s, want %s", r.Pattern, got, want)
		}
	}
}

// TestWalkFixtureSetsEveryDependency: a route registered only when an
// optional dependency is set would escape TestEveryRouteHasAccess if the
// fixture left it nil. A new Server field must be set in authSetup.
func TestWalkFixtureSetsEveryDependency(t *testing.T) {
	f := authSetup(t)
	v := reflect.ValueOf(f.api).Elem()
	for i := range v.NumField() {
		fv, name := v.Field(i), v.Type().Field(i).Name
		switch fv.Kind() {
		case reflect.Interface, reflect.Pointer, reflect.Func, reflect.Map, reflect.Slice:
			if fv.IsNil() {
				t.Errorf("httpapi.Server.%s is nil in authSetup: set it, so the routes it brings are walked", name)
			}
		}
	}
}

func TestRouteWithoutAccessCannotBeRegistered(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("an Extra route that is not a platform webhook was mounted without an Access")
		}
	}()
	api := &httpapi.Server{Extra: map[string]http.Handler{"POST /v1/sneaky": http.NotFoundHandler()}}
	api.Handler()
}

// TestScopeTable: a token with each one scope, against every route: a scope
// the route lists gets through (whatever the handler then says), any other
// gets the 403 naming the scope it lacks.
func TestScopeTable(t *testing.T) {
	f := authSetup(t)
	minted := map[tokens.Scope]string{}
	for _, s := range tokens.All {
		minted[s] = f.mint(t, tokens.Spec{Name: "only-" + strings.ReplaceAll(string(s), ":", "-"), Scopes: []tokens.Scope{s}})
	}
	for _, r := range f.api.Routes() {
		method, path := probe(r.Pattern)
		for _, s := range tokens.All {
			t.Run(r.Pattern+"/"+string(s), func(t *testing.T) {
				status, e, raw := f.call(t, method, path, minted[s], "{}")
				allowed := r.Access.Scopes() == nil || slices.Contains(r.Access.Scopes(), s)
				if allowed && (status == 401 || (status == 403 && strings.Contains(e.Error, "lacks scope"))) {
					t.Errorf("scope %s refused on %s: %d %s", s, r.Pattern, status, raw)
				}
				if !allowed {
					want := `token "only-` + strings.ReplaceAll(string(s), ":", "-") + `" lacks scope ` + strings.Join(strs(r.Access.Scopes()), " or ")
					if status != 403 || e.Code != "forbidden" || e.Error != want {
						t.Errorf("scope %s on %s: got %d %s, want 403 %q", s, r.Pattern, status, raw, want)
					}
				}
			})
		}
	}
}

func strs(ss []tokens.Scope) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// auditRecords returns the audit log's records of type typ.
func auditRecords(t *testing.T, path, typ string) []map[string]any {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []map[string]any
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var rec struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Type == typ {
			out = append(out, rec.Data)
		}
	}
	return out
}

func TestOutOfScopeCallIs403AndAudited(t *testing.T) {
	f := authSetup(t)
	tok := f.mint(t, tokens.Spec{Name: "ci-agent", Scopes: []tokens.Scope{tokens.Check}})
	status, _, raw := f.call(t, "POST", "/v1/requests", tok, `{"persona":"demo","action":"rm -rf /"}`)
	if status != 403 || strings.TrimSpace(raw) != `{"error":"token \"ci-agent\" lacks scope request","code":"forbidden"}` {
		t.Fatalf("got %d %s", status, raw)
	}
	recs := auditRecords(t, f.env.AuditPath, "auth")
	if len(recs) != 1 || recs[0]["token"] != "ci-agent" || recs[0]["result"] != "forbidden" || recs[0]["path"] != "/v1/requests" || recs[0]["needs"] != "request" {
		t.Errorf("audit records: %v", recs)
	}
	if rs, _ := f.env.Store.List(context.Background(), bot.Filter{}); len(rs) != 0 {
		t.Errorf("the refused call created %d requests", len(rs))
	}
}

func TestForgedAndRevokedTokensAre401AndAudited(t *testing.T) {
	f := authSetup(t)
	ctx := context.Background()
	tok := f.mint(t, tokens.Spec{Name: "agent", Scopes: []tokens.Scope{tokens.ReadRequests}})
	if status, _, raw := f.call(t, "GET", "/v1/requests", tok, ""); status != 200 {
		t.Fatalf("valid token: %d %s", status, raw)
	}
	// Same id, different secret: what someone who saw the id in a log would try.
	forged := tok[:len(tok)-4] + "AAAA"
	if forged == tok {
		forged = tok[:len(tok)-4] + "BBBB"
	}
	for _, tc := range []struct{ name, header string }{
		{"forged secret", "Bearer " + forged},
		{"not a signoff token", "Bearer hunter2"},
		{"basic auth", "Basic YWxpY2U6c2VjcmV0"},
		{"no token", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", f.srv.URL+"/v1/requests", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var e httpapi.ErrorBody
			json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != 401 || e.Code != bot.EUnauthorized || e.Error == "" {
				t.Errorf("got %d %+v, want 401 unauthorized", resp.StatusCode, e)
			}
		})
	}
	if _, err := f.env.Store.RevokeToken(ctx, "agent"); err != nil {
		t.Fatal(err)
	}
	status, e, raw := f.call(t, "GET", "/v1/requests", tok, "")
	if status != 401 || e.Error != "unknown or revoked token" {
		t.Errorf("revoked token: %d %s", status, raw)
	}
	if n := len(auditRecords(t, f.env.AuditPath, "auth")); n != 5 {
		t.Errorf("%d auth audit records, want 5 (four bad, one revoked)", n)
	}
}

func TestExpiredTokenIs401(t *testing.T) {
	f := authSetup(t)
	tok := f.mint(t, tokens.Spec{Name: "brief", Scopes: []tokens.Scope{tokens.ReadRequests}, TTL: time.Hour})
	if status, _, raw := f.call(t, "GET", "/v1/requests", tok, ""); status != 200 {
		t.Fatalf("fresh token: %d %s", status, raw)
	}
	f.api.Now = func() time.Time { return time.Now().Add(time.Hour + time.Second) }
	status, e, raw := f.call(t, "GET", "/v1/requests", tok, "")
	if status != 401 || !strings.Contains(e.Error, `token "brief" expired at`) {
		t.Errorf("expired token: %d %s", status, raw)
	}
}

// TestPersonaBoundAgentCannotFileForAnotherPersona: an agent given a token
// for persona demo tries to file for persona other (whose electorate may
// be looser) — in the body, in the query, and by reading other's requests.
func TestPersonaBoundAgentCannotFileForAnotherPersona(t *testing.T) {
	f := authSetup(t)
	ctx := context.Background()
	tok := f.mint(t, tokens.Spec{Name: "demo-agent", Scopes: []tokens.Scope{tokens.Request, tokens.ReadRequests}, Personas: []string{"demo"}})
	status, e, raw := f.call(t, "POST", "/v1/requests", tok, `{"persona":"other","action":"terraform destroy"}`)
	if status != 403 || e.Error != `token "demo-agent" may act only for persona demo, not "other"` {
		t.Errorf("filing for other: %d %s", status, raw)
	}
	if rs, _ := f.env.Store.List(ctx, bot.Filter{}); len(rs) != 0 {
		t.Errorf("a refused call created %d requests", len(rs))
	}
	if status, _, raw := f.call(t, "POST", "/v1/requests", tok, `{"persona":"demo","action":"terraform destroy"}`); status != 201 {
		t.Errorf("filing for demo: %d %s", status, raw)
	}
	theirs := f.env.Submit(t, bot.NewRequest{Persona: "other", Action: "ls"})
	if status, _, raw := f.call(t, "GET", "/v1/requests/"+theirs.ID, tok, ""); status != 403 {
		t.Errorf("reading other's request: %d %s", status, raw)
	}
	start := time.Now()
	if status, _, raw := f.call(t, "GET", "/v1/requests/"+theirs.ID+"?wait=30s", tok, ""); status != 403 || time.Since(start) > 5*time.Second {
		t.Errorf("waiting on other's request: %d after %s %s", status, time.Since(start), raw)
	}
	status, _, raw = f.call(t, "GET", "/v1/requests", tok, "")
	var list struct{ Requests []bot.Request }
	json.Unmarshal([]byte(raw), &list)
	if status != 200 || len(list.Requests) != 1 || list.Requests[0].Persona != "demo" {
		t.Errorf("listing: %d, want only demo's request: %s", status, raw)
	}
}

func TestBadTokensAreRateLimited(t *testing.T) {
	f := authSetup(t)
	f.mint(t, tokens.Spec{Name: "someone", Scopes: []tokens.Scope{tokens.ReadRequests}})
	var codes []int
	for range 15 {
		status, _, _ := f.call(t, "GET", "/v1/requests", "sgn_AAAAAAAAAAAAAAAA_"+strings.Repeat("x", 43), "")
		codes = append(codes, status)
	}
	if codes[0] != 401 || codes[14] != 429 {
		t.Errorf("codes %v: want 401s, then 429 past the burst", codes)
	}
	if n := len(auditRecords(t, f.env.AuditPath, "auth")); n > 10 {
		t.Errorf("%d audit records for a flood of bad tokens; the flood should not be audited call by call", n)
	}
}

func TestOpenOnLoopbackOnlyUntilATokenExists(t *testing.T) {
	f := authSetup(t)
	if status, _, raw := f.call(t, "GET", "/v1/requests", "", ""); status != 200 {
		t.Fatalf("no token created, loopback, no token sent: %d %s", status, raw)
	}
	f.mint(t, tokens.Spec{Name: "first", Scopes: []tokens.Scope{tokens.Admin}})
	if status, _, raw := f.call(t, "GET", "/v1/requests", "", ""); status != 401 {
		t.Errorf("a token exists, none sent: %d %s", status, raw)
	}
}

func TestRequireTokensClosesLoopback(t *testing.T) {
	f := authSetup(t)
	f.api.Auth.Require = true
	if status, _, raw := f.call(t, "GET", "/v1/requests", "", ""); status != 401 {
		t.Errorf("SIGNOFF_REQUIRE_TOKENS, no token: %d %s", status, raw)
	}
	if status, _, _ := f.call(t, "GET", "/healthz", "", ""); status != 200 {
		t.Errorf("/healthz needs no token, got %d", status)
	}
}

// TestNonLoopbackCallerNeedsAToken: with no token created, a caller from
// another machine still gets 401 (the open default is for loopback only).
func TestNonLoopbackCallerNeedsAToken(t *testing.T) {
	f := authSetup(t)
	for _, auth := range []*httpapi.Auth{f.api.Auth, nil} {
		api := *f.api
		api.Auth = auth
		h := api.Handler()
		req := httptest.NewRequest("GET", "/v1/requests", nil)
		req.Host = "signoff" // not httptest's example.com, which the Host check refuses
		req.RemoteAddr = "192.0.2.7:40000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 401 {
			t.Errorf("auth %v: remote caller without token got %d %s", auth != nil, w.Code, w.Body)
		}
	}
}

// TestExtensionCannotAskForADoorItDidNotDeclare: an extension whose manifest
// declared pypi.org:443 (what the person agreed to) asks for network access
// to somewhere else, directly and as a proxy draft.
func TestExtensionCannotAskForADoorItDidNotDeclare(t *testing.T) {
	f := authSetup(t)
	tok := f.mint(t, tokens.Spec{Name: "pypi-audit", Ext: "pypi-audit", Scopes: []tokens.Scope{tokens.NetRequest}, Network: []string{"pypi.org:443"}})
	for _, path := range []string{"/v1/network/requests", "/v1/network/drafts"} {
		for _, body := range []string{
			`{"persona":"demo","host":"evil.example","port":443,"reason":"r"}`,
			`{"persona":"demo","host":"pypi.org","port":22,"reason":"r"}`,
			`{"persona":"demo","host":"pypi.org.evil.example","port":443,"reason":"r"}`,
		} {
			status, e, raw := f.call(t, "POST", path, tok, body)
			if status != 403 || !strings.Contains(e.Error, `token "pypi-audit" may ask only for pypi.org:443`) {
				t.Errorf("%s %s: %d %s", path, body, status, raw)
			}
		}
		status, e, raw := f.call(t, "POST", path, tok, `{"persona":"demo","host":"pypi.org","port":443,"reason":"r"}`)
		if status == 401 || status == 403 {
			t.Errorf("%s for its declared door: %d %s %s", path, status, e.Code, raw)
		}
	}
	l, err := f.api.Network.List(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range l.Requests {
		if r.Dest.Host != "pypi.org" || r.Dest.Port != 443 {
			t.Errorf("a refused ask was filed: %+v", r)
		}
	}
	for _, d := range l.Drafts {
		if d.Dest.Host != "pypi.org" || d.Dest.Port != 443 {
			t.Errorf("a refused draft was filed: %+v", d)
		}
	}
}

func TestClassifyRoute(t *testing.T) {
	f := authSetup(t)
	tok := f.mint(t, tokens.Spec{Name: "linter", Scopes: []tokens.Scope{tokens.Classify}})
	status, _, raw := f.call(t, "POST", "/v1/classify", tok, `{"action":"rm -rf /"}`)
	var a bot.Assessment
	json.Unmarshal([]byte(raw), &a)
	if status != 200 || a.Level != bot.Dangerous || len(a.Reasons) == 0 {
		t.Errorf("classify: %d %s", status, raw)
	}
	for _, body := range []string{`{"action":""}`, `{"kind":"magic","action":"ls"}`, `{"action":"ls","persona":"x"}`} {
		if status, e, raw := f.call(t, "POST", "/v1/classify", tok, body); status != 400 || e.Code != bot.EInvalid {
			t.Errorf("%s: %d %s", body, status, raw)
		}
	}
	if rs, _ := f.env.Store.List(context.Background(), bot.Filter{}); len(rs) != 0 {
		t.Errorf("classify filed %d requests", len(rs))
	}
}

func TestSelfTokenShowsItsOwnDoorsOnly(t *testing.T) {
	f := authSetup(t)
	tok := f.mint(t, tokens.Spec{Name: "pypi-audit", Ext: "pypi-audit", Scopes: []tokens.Scope{tokens.ReadRequests}, Network: []string{"pypi.org:443"}})
	f.mint(t, tokens.Spec{Name: "other", Scopes: []tokens.Scope{tokens.Admin}})
	c := httpapi.NewClient(f.srv.URL)
	c.Token = tok
	self, err := c.SelfToken(context.Background())
	if err != nil || self.Name != "pypi-audit" || len(self.Network) != 1 || self.Network[0] != "pypi.org:443" || len(self.Hash) != 0 {
		t.Errorf("self = %+v, %v", self, err)
	}
	if status, _, raw := f.call(t, "GET", "/v1/tokens/self", "", ""); status != 401 {
		t.Errorf("self without a token: %d %s", status, raw)
	}
	// The record's JSON never carries the hash.
	_, _, raw := f.call(t, "GET", "/v1/tokens/self", tok, "")
	if strings.Contains(raw, "hash") {
		t.Errorf("the record shows its hash: %s", raw)
	}
}

func TestLastUseIsRecorded(t *testing.T) {
	f := authSetup(t)
	tok := f.mint(t, tokens.Spec{Name: "reader", Scopes: []tokens.Scope{tokens.ReadRequests}})
	before := time.Now().Add(-time.Second)
	if status, _, raw := f.call(t, "GET", "/v1/requests", tok, ""); status != 200 {
		t.Fatalf("%d %s", status, raw)
	}
	ts, err := f.env.Store.Tokens(context.Background())
	if err != nil || len(ts) != 1 || ts[0].LastUsed.Before(before) {
		t.Errorf("last used not recorded: %+v %v", ts, err)
	}
	// A revoked token's late touch does not bring a record back.
	f.env.Store.RevokeToken(context.Background(), "reader")
	f.env.Store.TouchToken(context.Background(), ts[0].ID, time.Now())
	if got, err := f.env.Store.Token(context.Background(), ts[0].ID); err == nil {
		t.Errorf("a touch resurrected a revoked token: %+v", got)
	}
}

// TestCallThroughAReverseProxyIsNotLoopback: nginx on the gateway's host
// forwards the network's calls to 127.0.0.1:8080. With no token created
// yet, those callers must not get the loopback default — nor make the
// first token.
func TestCallThroughAReverseProxyIsNotLoopback(t *testing.T) {
	f := authSetup(t)
	for _, h := range []string{"X-Forwarded-For", "Forwarded", "X-Real-IP"} {
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/v1/requests", ""},
			{"POST", "/v1/tokens", `{"name":"me","scopes":["admin"]}`},
		} {
			req, _ := http.NewRequest(c.method, f.srv.URL+c.path, strings.NewReader(c.body))
			req.Header.Set(h, "203.0.113.5")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Errorf("%s %s with %s: %d, want 401", c.method, c.path, h, resp.StatusCode)
			}
		}
	}
	if ts, _ := f.env.Store.Tokens(context.Background()); len(ts) != 0 {
		t.Errorf("a proxied caller made %d tokens", len(ts))
	}
}

// TestPersonaBoundAgentCannotFileWithACaseTwistedKey: encoding/json matches
// struct fields case-insensitively, so {"PERSONA":"other"} reaches the
// handler as persona other; the check must see it too. Likewise a twisted
// "HOST" for an extension's doors.
func TestPersonaBoundAgentCannotFileWithACaseTwistedKey(t *testing.T) {
	f := authSetup(t)
	tok := f.mint(t, tokens.Spec{Name: "demo-agent", Scopes: []tokens.Scope{tokens.Request, tokens.NetRequest}, Personas: []string{"demo"}, Network: []string{"pypi.org:443"}})
	for _, body := range []string{
		`{"PERSONA":"other","action":"terraform destroy"}`,
		`{"Persona":"other","action":"terraform destroy"}`,
		`{"persona":"demo","Persona":"other","action":"terraform destroy"}`,
		`{"perſona":"other","action":"terraform destroy"}`,
	} {
		if status, _, raw := f.call(t, "POST", "/v1/requests", tok, body); status != 403 {
			t.Errorf("%s: %d %s", body, status, raw)
		}
	}
	if rs, _ := f.env.Store.List(context.Background(), bot.Filter{}); len(rs) != 0 {
		t.Errorf("%d requests filed", len(rs))
	}
	for _, body := range []string{
		`{"persona":"demo","HOST":"evil.example","port":443,"reason":"r"}`,
		`{"persona":"demo","host":"pypi.org","Host":"evil.example","port":443,"reason":"r"}`,
		`{"persona":"demo","host":"pypi.org","PORT":22,"reason":"r"}`,
	} {
		if status, _, raw := f.call(t, "POST", "/v1/network/requests", tok, body); status != 403 {
			t.Errorf("%s: %d %s", body, status, raw)
		}
	}
}
