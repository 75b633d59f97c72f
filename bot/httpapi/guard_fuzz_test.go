package httpapi_test

import (
	"net"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// FuzzHostHeader: whatever the Host header holds, the gateway serves the
// call only when it names an IP address, localhost or an allowed name
// (authSetup: signoff, gateway.internal:8443), and never panics.
func FuzzHostHeader(f *testing.F) {
	fx := authSetup(f)
	h := fx.api.Handler()
	for _, s := range []string{"127.0.0.1:8080", "localhost", "[::1]:1", "signoff", "gateway.internal:8443", "attacker.example",
		"evil.localhost", "localhost.:80", "[::1", "::1", "[fe80::1%25eth0]:80", "signoff:", ":80", "gateway.internal:08443", "SIGNOFF."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = host
		req.RemoteAddr = "192.0.2.9:1234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 && w.Code != 421 && w.Code != 429 {
			t.Fatalf("Host %q: %d %s", host, w.Code, w.Body)
		}
		if w.Code == 421 {
			return
		}
		name, port, err := net.SplitHostPort(host)
		if err != nil {
			name, port = host, ""
		}
		name = strings.TrimSuffix(strings.ToLower(strings.Trim(name, "[]")), ".")
		if _, err := netip.ParseAddr(name); err == nil {
			return
		}
		if name == "localhost" || name == "signoff" || (name == "gateway.internal" && port == "8443") {
			return
		}
		t.Fatalf("Host %q (name %q, port %q) was served", host, name, port)
	})
}
