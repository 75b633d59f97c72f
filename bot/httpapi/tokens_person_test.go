package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/tokens"
	"github.com/signoff/signoff/signing"
)

// personCall calls the API signed by k (NIP-98), as `signoff tokens`
// does; mod, when set, changes the event before it is signed.
func personCall(t *testing.T, base, method, path string, k *signing.Key, body string, mod func(*nostr.Event)) (int, httpapi.ErrorBody, string) {
	t.Helper()
	ev := tokens.HTTPAuthEvent(tokens.Call{Method: method, URL: base + path, Body: []byte(body)}, time.Now())
	if mod != nil {
		mod(&ev)
	}
	if err := k.Sign(&ev); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ev)
	return headerCall(t, base, method, path, tokens.HTTPAuthHeader(raw), body)
}

func headerCall(t *testing.T, base, method, path, auth, body string) (int, httpapi.ErrorBody, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", auth)
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

// TestAgentCannotMintTheFirstTokenFromLoopback: on a fresh gateway, open
// on loopback because no token exists, the agent asks for the first admin
// token with no token and no signature (curl -X POST 127.0.0.1:PORT/v1/tokens).
// Nothing is made.
func TestAgentCannotMintTheFirstTokenFromLoopback(t *testing.T) {
	f := authSetup(t)
	status, e, raw := f.call(t, "POST", "/v1/tokens", "", `{"name":"agent-admin","scopes":["admin"]}`)
	if status != 401 || !strings.Contains(e.Error, "tokens are made by a person") {
		t.Errorf("a tokenless first token from loopback: %d %s, want 401", status, raw)
	}
	if recs := auditRecords(t, f.env.AuditPath, "auth"); len(recs) != 1 || recs[0]["path"] != "/v1/tokens" {
		t.Errorf("the refusal is not audited: %v", recs)
	}
	if ts, _ := f.env.Store.Tokens(context.Background()); len(ts) != 0 {
		t.Errorf("tokens made: %v", tokenNames(ts))
	}
	// The API is still open to calls that make no token.
	if status, _, raw := f.call(t, "GET", "/v1/requests", "", ""); status != 200 {
		t.Errorf("GET /v1/requests on the open loopback: %d %s", status, raw)
	}
}

// TestAgentCannotMintATokenWithABadSignature: each way a NIP-98 event can
// be wrong is a 401 that says why; nothing is made, and each refusal is
// audited.
func TestAgentCannotMintATokenWithABadSignature(t *testing.T) {
	f := authSetup(t)
	const body = `{"name":"agent-admin","scopes":["admin"]}`
	stranger := signing.NewKey()
	for _, tc := range []struct {
		name string
		key  *signing.Key
		mod  func(*nostr.Event)
		auth string // sent as is instead of a signed event
		want string
	}{
		{name: "malformed", auth: "Nostr eyJub3QiOiJhbiBldmVudCJ9", want: "event id must be"},
		{name: "not base64", auth: "Nostr %%%", want: "not base64"},
		{name: "stale", key: f.alice.Key, mod: func(e *nostr.Event) { e.CreatedAt = nostr.Timestamp(time.Now().Add(-61 * time.Second).Unix()) }, want: "more than 1m0s from now"},
		{name: "signed by a non-owner", key: stranger, want: "owns no loaded persona"},
		{name: "for another URL", key: f.alice.Key, mod: func(e *nostr.Event) { e.Tags[0][1] = f.srv.URL + "/v1/grants" }, want: "not this call's URL"},
		{name: "for another method", key: f.alice.Key, mod: func(e *nostr.Event) { e.Tags[1][1] = "DELETE" }, want: `method "DELETE"`},
		{name: "for another body", key: f.alice.Key, mod: func(e *nostr.Event) { e.Tags[2][1] = strings.Repeat("ab", 32) }, want: "payload hash does not match"},
		{name: "another kind", key: f.alice.Key, mod: func(e *nostr.Event) { e.Kind = 7 }, want: "kind 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var status int
			var e httpapi.ErrorBody
			var raw string
			if tc.auth != "" {
				status, e, raw = headerCall(t, f.srv.URL, "POST", "/v1/tokens", tc.auth, body)
			} else {
				status, e, raw = personCall(t, f.srv.URL, "POST", "/v1/tokens", tc.key, body, tc.mod)
			}
			if status != 401 || !strings.Contains(e.Error, tc.want) {
				t.Errorf("got %d %s, want 401 saying %q", status, raw, tc.want)
			}
		})
	}
	if ts, _ := f.env.Store.Tokens(context.Background()); len(ts) != 0 {
		t.Errorf("tokens made: %v", tokenNames(ts))
	}
	refusals := auditRecords(t, f.env.AuditPath, "auth")
	if len(refusals) != 8 {
		t.Errorf("%d refusals audited, want 8: %v", len(refusals), refusals)
	}
}

// TestAgentCannotReplayAPersonsSignedCall: a signed call seen once (in a
// log, on the wire) is refused the second time, within its 60 s.
func TestAgentCannotReplayAPersonsSignedCall(t *testing.T) {
	f := authSetup(t)
	ev := tokens.HTTPAuthEvent(tokens.Call{Method: "GET", URL: f.srv.URL + "/v1/tokens"}, time.Now())
	f.alice.Key.Sign(&ev)
	raw, _ := json.Marshal(ev)
	h := tokens.HTTPAuthHeader(raw)
	if status, _, body := headerCall(t, f.srv.URL, "GET", "/v1/tokens", h, ""); status != 200 {
		t.Fatalf("the person's call: %d %s", status, body)
	}
	if status, e, body := headerCall(t, f.srv.URL, "GET", "/v1/tokens", h, ""); status != 401 || !strings.Contains(e.Error, "already used") {
		t.Errorf("the same signed call again: %d %s", status, body)
	}
}

// TestPersonSignatureIsNoTokenForAgentRoutes: a persona owner's signature
// stands in for an admin token only; routes for agents' scopes want a token.
func TestPersonSignatureIsNoTokenForAgentRoutes(t *testing.T) {
	f := authSetup(t)
	status, e, raw := personCall(t, f.srv.URL, "POST", "/v1/requests", f.alice.Key, `{"persona":"demo","action":"x"}`, nil)
	if status != 401 || !strings.Contains(e.Error, "only on admin routes") {
		t.Errorf("a signed call to POST /v1/requests: %d %s", status, raw)
	}
}

// TestPersonManagesTokensWithTheirKey: the owner makes, lists and revokes
// tokens with signed calls; each change is audited with the signed event
// as its evidence, and the API is closed to tokenless calls from then on.
func TestPersonManagesTokensWithTheirKey(t *testing.T) {
	f := authSetup(t)
	status, _, raw := personCall(t, f.srv.URL, "POST", "/v1/tokens", f.alice.Key, `{"name":"me","scopes":["admin"]}`, nil)
	if status != 201 {
		t.Fatalf("create: %d %s", status, raw)
	}
	if status, _, raw := personCall(t, f.srv.URL, "POST", "/v1/tokens", f.alice.Key, `{"name":"ci","scopes":["request"]}`, nil); status != 201 {
		t.Fatalf("second: %d %s", status, raw)
	}
	if status, _, raw := personCall(t, f.srv.URL, "GET", "/v1/tokens", f.alice.Key, "", nil); status != 200 || !strings.Contains(raw, `"ci"`) {
		t.Errorf("list: %d %s", status, raw)
	}
	if status, _, raw := personCall(t, f.srv.URL, "DELETE", "/v1/tokens/ci", f.alice.Key, "", nil); status != 200 {
		t.Errorf("revoke: %d %s", status, raw)
	}
	if status, _, raw := f.call(t, "GET", "/v1/requests", "", ""); status != 401 {
		t.Errorf("tokenless call once a token exists: %d %s", status, raw)
	}
	recs := auditRecords(t, f.env.AuditPath, "token")
	if len(recs) != 3 || recs[2]["action"] != "revoked" {
		t.Fatalf("token records: %v", recs)
	}
	var withEvidence int
	for _, line := range auditLines(t, f.env.AuditPath, "token") {
		var rec struct{ Evidence nostr.Event }
		json.Unmarshal([]byte(line), &rec)
		if rec.Evidence.Kind == tokens.KindHTTPAuth && rec.Evidence.PubKey == f.alice.Key.PublicKey() {
			withEvidence++
		}
	}
	if withEvidence != 3 {
		t.Errorf("%d token records carry the signed call as evidence, want 3", withEvidence)
	}
}

func auditLines(t *testing.T, path, typ string) []string {
	t.Helper()
	var out []string
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"type":"`+typ+`"`) {
			out = append(out, l)
		}
	}
	return out
}
