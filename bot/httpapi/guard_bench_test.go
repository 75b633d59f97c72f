package httpapi_test

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/signoff/signoff/bot/httpapi"
)

// BenchmarkGuards: GET /healthz through the handler with no rate limit
// (the floor: routing, the Host check, the answer), with the limit and one
// client, and with the limit and 10000 clients taking turns (the table
// full, every call an LRU move).
func BenchmarkGuards(b *testing.B) {
	f := authSetup(b)
	for _, c := range []struct {
		name    string
		limit   bool
		clients int
	}{{"floor-no-limit", false, 1}, {"limit-1-client", true, 1}, {"limit-10000-clients", true, 10000}} {
		b.Run(c.name, func(b *testing.B) {
			api := *f.api
			api.Limit = nil
			if c.limit {
				api.Limit, _ = httpapi.NewRateLimit(1e9, 1e9)
			}
			h := api.Handler()
			addrs := make([]string, c.clients)
			for i := range addrs {
				addrs[i] = fmt.Sprintf("10.0.%d.%d:1", i>>8, i&255)
			}
			req := httptest.NewRequest("GET", "/healthz", nil)
			req.Host = "127.0.0.1:8080"
			i := 0
			for b.Loop() {
				req.RemoteAddr = addrs[i%len(addrs)]
				i++
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
	}
}
