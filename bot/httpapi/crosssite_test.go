package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
)

// TestCrossSiteFormPostIsRefused: a web page the person visits posts a
// request to the local gateway as a "simple" cross-site request (no
// Content-Type, text/plain, a form). It gets 415 and nothing is filed.
func TestCrossSiteFormPostIsRefused(t *testing.T) {
	f := setup(t)
	body := `{"persona":"demo","action":"rm -rf ~"}`
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonp"} {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/requests", strings.NewReader(body))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("Content-Type %q: %d, want 415", ct, resp.StatusCode)
		}
	}
	rs, err := f.env.Gateway.List(context.Background(), bot.Filter{Status: bot.Pending})
	if err != nil || len(rs) != 0 {
		t.Fatalf("pending after refused posts = %d %v, want none", len(rs), err)
	}
}

// TestCrossSiteBodilessWithdrawIsRefused: with no token created yet (the
// open loopback default), a web page the person visits makes their
// browser withdraw a pending request whose id it saw on a card: a
// bodiless no-cors POST (no Content-Type to refuse), or a wait with
// withdraw_on_disconnect=true that it then aborts. A browser marks both as
// cross-site (Sec-Fetch-Site, Origin); they are refused and the request
// stays pending. The person's own browser opening a URL (Sec-Fetch-Site:
// none) and clients that are not browsers (no such headers) are served.
func TestCrossSiteBodilessWithdrawIsRefused(t *testing.T) {
	f := setup(t)
	r := f.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "rm -rf /srv"})
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site", "Origin": "https://attacker.example"},
		{"Sec-Fetch-Site": "same-site", "Origin": "http://other.localhost:8080"},
		{"Origin": "https://attacker.example"}, // an older browser: Origin only
		{"Origin": "null"},                     // a sandboxed frame, a file:// page
	} {
		for _, c := range []struct{ method, path string }{
			{"POST", "/v1/requests/" + r.ID + "/withdraw"},
			{"GET", "/v1/requests/" + r.ID + "?wait=1ms&withdraw_on_disconnect=true"},
			{"GET", "/v1/requests"},
		} {
			req, _ := http.NewRequest(c.method, f.srv.URL+c.path, nil)
			for k, v := range h {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var e httpapi.ErrorBody
			json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || e.Code != bot.EForbidden || !strings.Contains(e.Error, "cross-site") {
				t.Errorf("%s %s with %v: %d %+v, want 403 cross-site", c.method, c.path, h, resp.StatusCode, e)
			}
		}
	}
	if got, _ := f.env.Gateway.Get(context.Background(), r.ID); got.Status != bot.Pending {
		t.Fatalf("after cross-site calls the request is %s, want pending", got.Status)
	}
	host := strings.TrimPrefix(f.srv.URL, "http://")
	for _, h := range []map[string]string{
		{},
		{"Sec-Fetch-Site": "none"},
		{"Sec-Fetch-Site": "same-origin", "Origin": "http://" + host},
		{"Origin": "http://" + host},
	} {
		req, _ := http.NewRequest("GET", f.srv.URL+"/v1/requests", nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /v1/requests with %v: %d, want 200", h, resp.StatusCode)
		}
	}
}
