package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/risk"
	"github.com/signoff/signoff/signing"
)

type fixture struct {
	env    *bottest.Env
	srv    *httptest.Server
	client *httpapi.Client
	alice  bottest.Person
	bob    bottest.Person
	agent  bottest.Person
}

func setup(t *testing.T) *fixture {
	t.Helper()
	alice, bob, agent := bottest.NewPerson("alice"), bottest.NewPerson("bob"), bottest.NewPerson("agent")
	p := bot.Persona{
		Name:           "demo",
		Agent:          []bot.Identity{agent.Identity()},
		Owner:          &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}},
		Members:        []bot.Person{{Name: "bob", Identities: []bot.Identity{bob.Identity()}}},
		ApprovalQuorum: 1, DenyQuorum: 1, Timeout: time.Minute,
	}
	env := bottest.New(t, p, nil)
	env.Gateway.Classifier = risk.Default()
	api := &httpapi.Server{Gateway: env.Gateway, Ready: env.Store.Ping}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return &fixture{env: env, srv: srv, client: httpapi.NewClient(srv.URL), alice: alice, bob: bob, agent: agent}
}

func post(t *testing.T, url, body string) (int, httpapi.ErrorBody, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
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

func TestSubmitRejectsBadInput(t *testing.T) {
	f := setup(t)
	huge := `{"persona":"demo","action":"` + strings.Repeat("a", httpapi.MaxBody) + `"}`
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"malformed JSON", `{"persona":`, 400, bot.EInvalid},
		{"not an object", `[1,2]`, 400, bot.EInvalid},
		{"unknown field", `{"persona":"demo","action":"ls","quorum":0}`, 400, bot.EInvalid},
		{"trailing data", `{"persona":"demo","action":"ls"} {}`, 400, bot.EInvalid},
		{"no action", `{"persona":"demo"}`, 400, bot.EInvalid},
		{"no persona", `{"action":"ls"}`, 400, bot.EInvalid},
		{"unknown persona", `{"persona":"nope","action":"ls"}`, 404, bot.ENotFound},
		{"bad kind", `{"persona":"demo","action":"ls","kind":"magic"}`, 400, bot.EInvalid},
		{"bad timeout", `{"persona":"demo","action":"ls","timeout":"soon"}`, 400, bot.EInvalid},
		{"huge body", huge, 413, bot.ETooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, e, raw := post(t, f.srv.URL+"/v1/requests", tc.body)
			if status != tc.status || e.Code != tc.code || e.Error == "" {
				t.Errorf("got %d %s, want %d with code %s", status, raw, tc.status, tc.code)
			}
		})
	}
	rs, err := f.client.List(context.Background(), bot.Filter{})
	if err != nil || len(rs) != 0 {
		t.Errorf("bad input created requests: %d, %v", len(rs), err)
	}
}

func TestNostrEventsRejectsBadEvents(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	r, err := f.client.Submit(ctx, bot.NewRequest{Persona: "demo", Action: "terraform destroy"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	good := f.alice.Reaction(r, "✅", now)

	tamper := func(mut func(*nostr.Event)) string {
		var ev nostr.Event
		json.Unmarshal(good, &ev)
		mut(&ev)
		b, _ := json.Marshal(ev)
		return string(b)
	}
	resign := func(mut func(*nostr.Event)) string {
		var ev nostr.Event
		json.Unmarshal(good, &ev)
		mut(&ev)
		f.alice.Key.Sign(&ev)
		b, _ := json.Marshal(ev)
		return string(b)
	}
	otherKey := signing.NewKey()
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"malformed JSON", `{"id":`, 400, bot.EInvalid},
		{"empty", ``, 400, bot.EInvalid},
		{"short id", tamper(func(e *nostr.Event) { e.ID = e.ID[:10] }), 400, bot.EInvalid},
		{"tampered content", tamper(func(e *nostr.Event) { e.Content = "❌" }), 401, bot.EUnauthorized},
		{"forged id", tamper(func(e *nostr.Event) { e.ID = strings.Repeat("ab", 32) }), 401, bot.EUnauthorized},
		{"forged signature", tamper(func(e *nostr.Event) { e.Sig = strings.Repeat("cd", 64) }), 401, bot.EUnauthorized},
		{"pubkey swapped", tamper(func(e *nostr.Event) { e.PubKey = otherKey.PublicKey() }), 401, bot.EUnauthorized},
		{"wrong kind", resign(func(e *nostr.Event) { e.Kind = 1 }), 400, bot.EInvalid},
		{"stale", resign(func(e *nostr.Event) { e.CreatedAt = nostr.Timestamp(now.Add(-time.Hour).Unix()) }), 400, bot.EStale},
		{"future", resign(func(e *nostr.Event) { e.CreatedAt = nostr.Timestamp(now.Add(time.Hour).Unix()) }), 400, bot.EStale},
		{"no e tag", resign(func(e *nostr.Event) { e.Tags = nostr.Tags{{"p", r.GatewayKey}} }), 400, bot.EInvalid},
		{"unknown target", resign(func(e *nostr.Event) { e.Tags = nostr.Tags{{"e", strings.Repeat("0", 64)}} }), 404, bot.ENotFound},
		{"huge", `{"content":"` + strings.Repeat("x", httpapi.MaxBody) + `"}`, 413, bot.ETooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, e, raw := post(t, f.srv.URL+"/v1/nostr/events", tc.body)
			if status != tc.status || e.Code != tc.code {
				t.Errorf("got %d %s, want %d with code %s", status, raw, tc.status, tc.code)
			}
		})
	}
	got, err := f.client.Get(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != bot.Pending || len(got.Votes) != 0 {
		t.Fatalf("bad events changed the request: %s with %d votes", got.Status, len(got.Votes))
	}

	// The agent's own key and a replay: recorded or refused, never counted.
	out, err := f.client.PostEvent(ctx, f.agent.Reaction(r, "✅", now))
	if err != nil || out.Result != bot.Ignored || !strings.Contains(out.Reason, "agent") {
		t.Fatalf("agent's own vote = %+v, %v; want ignored because it is the agent", out, err)
	}
	out, err = f.client.PostEvent(ctx, good)
	if err != nil || out.Result != bot.Counted || out.Status != bot.Approved {
		t.Fatalf("owner's vote = %+v, %v; want counted, approved", out, err)
	}
	out, err = f.client.PostEvent(ctx, good)
	if err != nil || out.Result != bot.Duplicate || out.Status != bot.Approved {
		t.Fatalf("replay = %+v, %v; want duplicate, still approved", out, err)
	}
	got, _ = f.client.Get(ctx, r.ID)
	if len(got.Votes) != 2 || got.Votes[0].Result != bot.Ignored || got.Votes[1].Result != bot.Counted {
		t.Fatalf("votes = %+v, want the agent's ignored then alice's counted", got.Votes)
	}
}

func TestWaitLongPolls(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	r, err := f.client.Submit(ctx, bot.NewRequest{Persona: "demo", Action: "git push --force"})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *bot.Request, 1)
	go func() {
		w, err := f.client.Wait(ctx, r.ID, 30*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	// Let the waiter register; the decision must reach it either way.
	for f.env.Gateway.Waiting() == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := f.client.PostEvent(ctx, f.bob.Reaction(r, "❌", time.Now())); err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-got:
		if w.Status != bot.Denied || len(w.DecidedBy) != 1 || w.DecidedBy[0] != "bob" || w.DecidedAt == nil {
			t.Fatalf("waiter got %s by %v, want denied by bob", w.Status, w.DecidedBy)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("long poll not answered 10s after the decision")
	}

	resp, err := http.Get(f.srv.URL + "/v1/requests/" + r.ID + "?wait=forever")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("?wait=forever: %d, want 400", resp.StatusCode)
	}
	resp, _ = http.Get(f.srv.URL + "/v1/requests?status=maybe")
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("?status=maybe: %d, want 400", resp.StatusCode)
	}
	resp, _ = http.Get(f.srv.URL + "/readyz")
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/readyz: %d, want 200", resp.StatusCode)
	}
}

// FuzzSubmit feeds arbitrary bodies to POST /v1/requests: never a panic,
// never a 5xx, and a 201 only for a well-formed request.
func FuzzSubmit(f *testing.F) {
	for _, s := range []string{`{"persona":"demo","action":"ls"}`, `{"persona":"demo","action":"rm -rf /","timeout":"1s","kind":"command"}`, `{`, `null`, `{"persona":"demo","action":"\u0000"}`} {
		f.Add(s)
	}
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Minute}
	env := bottest.New(f, p, nil)
	h := (&httpapi.Server{Gateway: env.Gateway}).Handler()
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/v1/requests", strings.NewReader(body))
		req.Host = "127.0.0.1:8080" // not httptest's example.com, which the Host check refuses
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q → %d %s", body, rec.Code, rec.Body)
		}
		if rec.Code == 201 {
			var r bot.Request
			if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || r.ID == "" || r.Persona != "demo" {
				t.Fatalf("%q → 201 but %s", body, rec.Body)
			}
		}
	})
}

// FuzzNostrEvent feeds arbitrary bodies to POST /v1/nostr/events: never a
// panic, never a 5xx, never a counted vote from an unsigned event.
func FuzzNostrEvent(f *testing.F) {
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, DenyQuorum: 1, Timeout: time.Hour}
	env := bottest.New(f, p, nil)
	r, err := env.Gateway.Submit(context.Background(), bot.NewRequest{Persona: "demo", Action: "ls"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(bottest.NewPerson("mallory").Reaction(r, "✅", time.Now())))
	f.Add(`{"id":"","kind":7}`)
	f.Add(`{"id":"00","pubkey":"00","sig":"00","kind":7,"tags":[["e"]]}`)
	h := (&httpapi.Server{Gateway: env.Gateway}).Handler()
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/v1/nostr/events", strings.NewReader(body))
		req.Host = "127.0.0.1:8080" // not httptest's example.com, which the Host check refuses
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q → %d %s", body, rec.Code, rec.Body)
		}
		if got, _ := env.Gateway.Get(context.Background(), r.ID); got.Status != bot.Pending {
			t.Fatalf("%q decided the request: %s", body, got.Status)
		}
	})
}

func TestRecordAction(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	a, err := f.client.Record(ctx, bot.NewRequest{Persona: "demo", Action: "git commit -m wip"})
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	if a.Level == bot.Dangerous {
		t.Errorf("git commit recorded as %s", a.Level)
	}
	// A dangerous action is never recorded as having run unasked.
	if _, err := f.client.Record(ctx, bot.NewRequest{Persona: "demo", Action: "rm -rf /"}); bot.ErrorCode(err) != bot.EConflict {
		t.Errorf("dangerous record: %v, want conflict", err)
	}
	if _, err := f.client.Record(ctx, bot.NewRequest{Persona: "nope", Action: "ls"}); bot.ErrorCode(err) != bot.ENotFound {
		t.Errorf("unknown persona: %v, want not_found", err)
	}
	if status, _, raw := post(t, f.srv.URL+"/v1/actions", `{"persona":"demo"`); status != 400 {
		t.Errorf("malformed: %d %s", status, raw)
	}
	if rs, _ := f.client.List(ctx, bot.Filter{}); len(rs) != 0 {
		t.Errorf("recording created %d requests", len(rs))
	}
}

// TestReadyzSaysTheStoreDidNotAnswer: a store that does not answer at all
// (its host down: the check runs out of time, an error with no message of
// ours) is named in /readyz's answer, not "internal error".
func TestReadyzSaysTheStoreDidNotAnswer(t *testing.T) {
	env := bottest.New(t, bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice"}}, nil)
	api := &httpapi.Server{Gateway: env.Gateway, Ready: func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}}
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "the store did not answer within 2s") {
		t.Errorf("/readyz with a store that hangs = %d %s; want 503 saying the store did not answer", resp.StatusCode, body)
	}
}

// TestLargeAnswersAreOneWriteWithTheirLength: an answer past net/http's
// 2 KB buffer (a request with a long action, as created and as read) is
// sent whole with its length, not in chunks (a write each, and one for
// the end).
func TestLargeAnswersAreOneWriteWithTheirLength(t *testing.T) {
	f := setup(t)
	body := `{"persona":"demo","kind":"command","action":"deploy ` + strings.Repeat("x", 3000) + `","reason":"big"}`
	check := func(what string, resp *http.Response) []byte {
		t.Helper()
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode/100 != 2 || len(b) < 3000 {
			t.Fatalf("%s: %s, %d bytes", what, resp.Status, len(b))
		}
		if len(resp.TransferEncoding) != 0 || resp.ContentLength != int64(len(b)) {
			t.Errorf("%s: transfer encoding %v, length %d, body %d bytes; want the length told, not chunks", what, resp.TransferEncoding, resp.ContentLength, len(b))
		}
		return b
	}
	resp, err := http.Post(f.srv.URL+"/v1/requests", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var r bot.Request
	if err := json.Unmarshal(check("create", resp), &r); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(f.srv.URL + "/v1/requests/" + r.ID)
	if err != nil {
		t.Fatal(err)
	}
	check("read", resp)
}
