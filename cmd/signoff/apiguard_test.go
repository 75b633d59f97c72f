package main

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
)

// hostCall is GET path on the gateway at SIGNOFF_URL with Host host and
// the e2e token.
func hostCall(t *testing.T, host, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", os.Getenv("SIGNOFF_URL")+path, nil)
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+os.Getenv("SIGNOFF_TOKEN"))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestServeRefusesARebindingHost: the real serve refuses a Host it does
// not serve (what a browser sends after DNS rebinding), serves the names
// in SIGNOFF_ALLOWED_HOSTS and IP addresses, and its HEALTHCHECK works.
func TestServeRefusesARebindingHost(t *testing.T) {
	t.Setenv("SIGNOFF_ALLOWED_HOSTS", "signoff.internal")
	gateway(t, demoPersona)
	port := os.Getenv("SIGNOFF_URL")[strings.LastIndex(os.Getenv("SIGNOFF_URL"), ":")+1:]
	for _, path := range []string{"/healthz", "/v1/requests"} {
		if code, body := hostCall(t, "attacker.example:"+port, path); code != 421 || !strings.Contains(body, "SIGNOFF_ALLOWED_HOSTS") {
			t.Errorf("%s with Host attacker.example: %d %s, want 421 naming SIGNOFF_ALLOWED_HOSTS", path, code, body)
		}
		for _, host := range []string{"signoff.internal:" + port, "127.0.0.1:" + port, "localhost:" + port} {
			if code, body := hostCall(t, host, path); code != 200 {
				t.Errorf("%s with Host %s: %d %s, want 200", path, host, code, body)
			}
		}
	}
	if code, out, errs := cli("healthcheck", "--ready"); code != 0 {
		t.Errorf("healthcheck --ready = %d %q %q", code, out, errs)
	}
}

// TestServeRateLimitFromTheEnvironment: SIGNOFF_RATE_LIMIT and
// SIGNOFF_RATE_BURST reach serve (a rate of one call in 100s: past the
// burst of 3 the next is 429, whatever the machine's speed).
func TestServeRateLimitFromTheEnvironment(t *testing.T) {
	t.Setenv("SIGNOFF_RATE_LIMIT", "0.01")
	t.Setenv("SIGNOFF_RATE_BURST", "3") // the e2e token is made from this address, then has its own 3
	gateway(t, demoPersona)
	var codes []int
	for range 4 {
		code, _ := hostCall(t, "127.0.0.1", "/v1/requests")
		codes = append(codes, code)
	}
	if codes[0] != 200 || codes[2] != 200 || codes[3] != 429 {
		t.Errorf("codes %v: want 200 × 3 then 429", codes)
	}
	code, out, errs := cli("pending")
	// Asked to wait 100s, more than a client waits: it fails at once.
	if code == 0 || !strings.Contains(out+errs, "too many calls") || !strings.Contains(out+errs, "SIGNOFF_RATE_LIMIT") ||
		!strings.Contains(errs, "more than the 30s signoff waits") {
		t.Errorf("the CLI past the limit: %d %q %q, want a clear error", code, out, errs)
	}
}

func TestAPIGuardSettings(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		hosts, rate, burst string
		err                string
	}{
		{"http://x", "", "", "SIGNOFF_ALLOWED_HOSTS"},
		{"", "fast", "", `SIGNOFF_RATE_LIMIT "fast" is not a number`},
		{"", "-1", "", "SIGNOFF_RATE_LIMIT -1"},
		{"", "10", "lots", `SIGNOFF_RATE_BURST "lots" is not a whole number`},
		{"", "10", "0", "SIGNOFF_RATE_BURST 0"},
	} {
		_, _, err := apiGuards(&config{AllowedHosts: c.hosts, RateLimit: c.rate, RateBurst: c.burst}, quiet)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%+v: %v, want an error with %q", c, err, c.err)
		}
	}
	hosts, limit, err := apiGuards(&config{AllowedHosts: "a, b:80", RateLimit: "", RateBurst: ""}, quiet)
	if err != nil || len(hosts) != 2 || limit == nil || limit.Rate != 50 || limit.Burst != 200 {
		t.Errorf("defaults: %v %+v %v", hosts, limit, err)
	}
	if _, limit, err := apiGuards(&config{RateLimit: "0"}, quiet); err != nil || limit != nil {
		t.Errorf("SIGNOFF_RATE_LIMIT=0: %+v %v, want no limit", limit, err)
	}
}
