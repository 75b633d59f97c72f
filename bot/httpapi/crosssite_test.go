package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/signoff/signoff/bot"
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
