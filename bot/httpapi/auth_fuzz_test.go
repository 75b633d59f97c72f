package httpapi_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/signoff/signoff/bot/tokens"
)

// FuzzAuthorizationHeader: whatever the Authorization header holds, a
// protected route answers 401 or 429 (never 200, never a panic) unless it
// is exactly a live token.
func FuzzAuthorizationHeader(f *testing.F) {
	fx := authSetup(f)
	tok := fx.mint(f, tokens.Spec{Name: "reader", Scopes: []tokens.Scope{tokens.ReadRequests}})
	h := fx.api.Handler()
	for _, s := range []string{"", "Bearer " + tok, "bearer " + tok, "Bearer " + tok + " ", "Bearer  " + tok, "Basic " + tok,
		"Bearer " + strings.ToLower(tok), "Bearer " + tok[:len(tok)-1] + "A", "Bearer sgn_", tok, "Bearer " + tok + "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest("GET", "/v1/requests", nil)
		req.Host = "127.0.0.1:8080"       // not httptest's example.com, which the Host check refuses
		req.RemoteAddr = "192.0.2.9:1234" // not loopback: no open default
		if header != "" {
			req.Header["Authorization"] = []string{header}
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		_, whole, err := tokens.ParseBearer(header)
		valid := err == nil && whole == tok
		switch {
		case valid && w.Code != 200:
			t.Fatalf("the live token in %q got %d %s", header, w.Code, w.Body)
		case !valid && w.Code != 401 && w.Code != 429:
			t.Fatalf("header %q got %d %s", header, w.Code, w.Body)
		}
	})
}
