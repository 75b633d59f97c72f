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

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/netpolicy"
)

// TestNetworkRoutesRefuseBadInput sends bad input to every network route
// and checks each gets a clear 4xx error and changes nothing.
func TestNetworkRoutesRefuseBadInput(t *testing.T) {
	alice := bottest.NewPerson("alice")
	env := bottest.New(t, bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}}, Timeout: time.Hour}, nil)
	svc := &netpolicy.Service{Gateway: env.Gateway, Store: env.Store, Decisions: env.Store.Watch}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	if _, err := svc.Seed(context.Background(), "p.yaml", []byte("hosts: []\n")); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&httpapi.Server{Gateway: env.Gateway, Network: svc}).Handler())
	defer srv.Close()
	f, err := svc.FileRequest(context.Background(), "demo", netpolicy.Dest{Host: "a.example", Port: 443}, "r")
	if err != nil {
		t.Fatal(err)
	}
	id := f.Request.ID
	other, _ := svc.FileRequest(context.Background(), "demo", netpolicy.Dest{Host: "b.example", Port: 443}, "r")
	otherEvent := string(alice.Reaction(other.Request, "✅", time.Now()))
	deny := string(alice.Reaction(f.Request, "❌", time.Now()))
	forged := strings.Replace(string(alice.Reaction(f.Request, "✅", time.Now())), `"content":"✅"`, `"content":"✅ "`, 1)

	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"not JSON", "POST", "/v1/network/requests", "{", 400, "not valid JSON"},
		{"unknown field", "POST", "/v1/network/requests", `{"persona":"demo","host":"a.com","port":443,"reason":"r","open":"all"}`, 400, "unknown field"},
		{"port as string", "POST", "/v1/network/requests", `{"persona":"demo","host":"a.com","port":"443","reason":"r"}`, 400, "not valid JSON"},
		{"port out of range", "POST", "/v1/network/requests", `{"persona":"demo","host":"a.com","port":65536,"reason":"r"}`, 400, "port 65536"},
		{"port zero", "POST", "/v1/network/requests", `{"persona":"demo","host":"a.com","port":0,"reason":"r"}`, 400, "port 0"},
		{"host with port", "POST", "/v1/network/requests", `{"persona":"demo","host":"a.com:443","port":443,"reason":"r"}`, 400, "not a name"},
		{"host with path", "POST", "/v1/network/requests", `{"persona":"demo","host":"a.com/x","port":443,"reason":"r"}`, 400, "character"},
		{"wildcard host", "POST", "/v1/network/requests", `{"persona":"demo","host":"*.a.com","port":443,"reason":"r"}`, 400, "character"},
		{"huge path", "POST", "/v1/network/requests", `{"persona":"demo","host":"a.com","port":443,"method":"GET","path":"/` + strings.Repeat("a", 3000) + `","reason":"r"}`, 400, "longer than"},
		{"path without method", "POST", "/v1/network/requests", `{"persona":"demo","host":"a.com","port":443,"path":"/x","reason":"r"}`, 400, "needs a method"},
		{"no reason", "POST", "/v1/network/requests", `{"persona":"demo","host":"a.com","port":443}`, 400, "reason is required"},
		{"unknown persona", "POST", "/v1/network/requests", `{"persona":"nope","host":"a.com","port":443,"reason":"r"}`, 404, "unknown persona"},
		{"too large", "POST", "/v1/network/requests", `{"persona":"demo","host":"a.com","port":443,"reason":"` + strings.Repeat("a", 2<<20) + `"}`, 413, "larger than"},
		{"draft bad port", "POST", "/v1/network/drafts", `{"persona":"demo","host":"a.com","port":-1}`, 400, "port -1"},
		{"draft no persona", "POST", "/v1/network/drafts", `{"host":"a.com","port":1}`, 400, "persona is required"},
		{"list all=maybe", "GET", "/v1/network/requests?all=maybe", "", 400, "not true or false"},
		{"approve unknown id", "POST", "/v1/network/requests/zzzz/approve", `{}`, 404, "no network request or draft"},
		{"approve without event", "POST", "/v1/network/requests/" + id + "/approve", `{}`, 400, "signed reaction"},
		{"approve with a broken event", "POST", "/v1/network/requests/" + id + "/approve", `{"event":{"kind":7}}`, 400, ""},
		{"approve with a forged event", "POST", "/v1/network/requests/" + id + "/approve", `{"event":` + forged + `}`, 401, ""},
		{"approve with another request's reaction", "POST", "/v1/network/requests/" + id + "/approve", `{"event":` + otherEvent + `}`, 400, "another request"},
		{"approve with a ❌", "POST", "/v1/network/requests/" + id + "/approve", `{"event":` + deny + `}`, 400, "not approve"},
		{"approve with an invalid copy", "POST", "/v1/network/requests/" + id + "/approve", `{"event":` + string(alice.Reaction(f.Request, "✅", time.Now())) + `,"policy":"hosts: [1"}`, 400, "keeps waiting"},
		{"deny without reason", "POST", "/v1/network/requests/" + id + "/deny", `{"event":` + deny + `}`, 400, "reason is required"},
		{"policy rev not a number", "GET", "/v1/network/policy?rev=abc", "", 400, "not a revision number"},
		{"policy rev negative", "GET", "/v1/network/policy?rev=-1", "", 400, "not a revision number"},
		{"policy rev unknown", "GET", "/v1/network/policy?rev=99", "", 404, "no policy revision 99"},
		{"policy bad wait", "GET", "/v1/network/policy?after=1&wait=soon", "", 400, "not a duration"},
		{"policy bad after", "GET", "/v1/network/policy?after=x&wait=1s", "", 400, "not a revision number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var e httpapi.ErrorBody
			json.Unmarshal(raw, &e)
			if resp.StatusCode != c.status || e.Code == "" || !strings.Contains(e.Error, c.want) {
				t.Fatalf("%d %s, want %d with %q", resp.StatusCode, raw, c.status, c.want)
			}
		})
	}
	// Nothing changed: the two requests still wait, no revision, no draft.
	l, _ := svc.List(context.Background(), true)
	if len(l.Requests) != 2 || l.Requests[0].Status != bot.Pending || l.Requests[1].Status != bot.Pending || len(l.Drafts) != 0 || l.Current != 1 {
		t.Fatalf("bad input changed something: %+v", l)
	}
}
