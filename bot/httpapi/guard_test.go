package httpapi_test

import (
	"context"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/tokens"
)

// bodies a call to each route sends: enough that, were the Host check
// missing, the call would do something (file a request, make a token).
var guardBodies = map[string]string{
	"POST /v1/requests":         `{"persona":"demo","action":"rm -rf ~","reason":"rebound"}`,
	"POST /v1/tokens":           `{"name":"rebound","scopes":["admin"]}`,
	"POST /v1/actions":          `{"persona":"demo","action":"git status"}`,
	"POST /v1/check":            `{"persona":"demo","kind":"command","action":"ls"}`,
	"POST /v1/publish":          `{"persona":"demo","text":"rebound"}`,
	"POST /v1/network/requests": `{"persona":"demo","host":"pypi.org","port":443,"reason":"r"}`,
	"POST /v1/network/drafts":   `{"persona":"demo","host":"pypi.org","port":443,"reason":"r"}`,
}

// callHost is call with the Host header set to host.
func callHost(t *testing.T, base, host, method, path, token, body string) (int, httpapi.ErrorBody, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e httpapi.ErrorBody
	json.Unmarshal(raw, &e)
	return resp.StatusCode, e, string(raw)
}

// TestDNSRebindingIsRefused: a web page on attacker.example rebinds its
// name to 127.0.0.1; the person's browser then calls the gateway with
// Host: attacker.example — with no token (the open loopback default), with
// a token the page cannot know but tries anyway, and on the signed-body and
// public routes. Every call is refused before anything is done; the same
// calls with Host 127.0.0.1 get through.
func TestDNSRebindingIsRefused(t *testing.T) {
	f := authSetup(t)
	ctx := context.Background()
	for _, r := range f.api.Routes() {
		method, path := probe(r.Pattern)
		body := guardBodies[r.Pattern]
		if body == "" {
			body = "{}"
		}
		for _, host := range []string{"attacker.example", "attacker.example:" + port(f.srv.URL), "localhost.attacker.example"} {
			status, e, raw := callHost(t, f.srv.URL, host, method, path, "", body)
			if status != http.StatusMisdirectedRequest || e.Code != "misdirected_host" || !strings.Contains(e.Error, "SIGNOFF_ALLOWED_HOSTS") {
				t.Errorf("%s with Host %s: %d %s, want 421 naming SIGNOFF_ALLOWED_HOSTS", r.Pattern, host, status, raw)
			}
		}
	}
	if rs, _ := f.env.Store.List(ctx, bot.Filter{}); len(rs) != 0 {
		t.Errorf("rebound calls filed %d requests", len(rs))
	}
	if ts, _ := f.env.Store.Tokens(ctx); len(ts) != 0 {
		t.Errorf("rebound calls made %d tokens", len(ts))
	}
	// With a token (the page cannot read one, but a Host check must not
	// depend on that): still refused.
	admin := f.mint(t, tokens.Spec{Name: "admin", Scopes: tokens.All})
	for _, r := range f.api.Routes() {
		method, path := probe(r.Pattern)
		body := guardBodies[r.Pattern]
		if body == "" {
			body = "{}"
		}
		if status, _, raw := callHost(t, f.srv.URL, "attacker.example", method, path, admin, body); status != http.StatusMisdirectedRequest {
			t.Errorf("%s with a token and Host attacker.example: %d %s, want 421", r.Pattern, status, raw)
		}
	}
	if rs, _ := f.env.Store.List(ctx, bot.Filter{}); len(rs) != 0 {
		t.Errorf("rebound calls with a token filed %d requests", len(rs))
	}
	if ts, _ := f.env.Store.Tokens(ctx); len(ts) != 1 {
		t.Errorf("rebound calls with a token left %d tokens, want the 1 minted", len(ts))
	}
	if n := len(auditRecords(t, f.env.AuditPath, "request")); n != 0 {
		t.Errorf("%d request audit records after rebound calls", n)
	}
	// The control: the same call with Host 127.0.0.1 is served.
	if status, _, raw := callHost(t, f.srv.URL, "127.0.0.1:"+port(f.srv.URL), "POST", "/v1/requests", admin, guardBodies["POST /v1/requests"]); status != http.StatusCreated {
		t.Fatalf("Host 127.0.0.1: %d %s, want 201", status, raw)
	}
	if status, _, raw := callHost(t, f.srv.URL, "127.0.0.1:"+port(f.srv.URL), "GET", "/healthz", "", ""); status != http.StatusOK {
		t.Fatalf("/healthz with Host 127.0.0.1: %d %s", status, raw)
	}
}

func port(url string) string { return url[strings.LastIndex(url, ":")+1:] }

// TestHostHeaderForms: which Host values the gateway serves. IP addresses
// (loopback, a pod IP from a Kubernetes probe) and localhost always; names
// only from AllowedHosts (authSetup: "signoff" on any port,
// "gateway.internal" on 8443 only); anything else, *.localhost included,
// is refused.
func TestHostHeaderForms(t *testing.T) {
	f := authSetup(t)
	h := f.api.Handler()
	for host, want := range map[string]int{
		"127.0.0.1": 200, "127.0.0.1:8080": 200, "127.0.0.2:1": 200, "localhost": 200, "LocalHost:8080": 200,
		"localhost.:8080": 200, "[::1]:8080": 200, "[::1]": 200, "10.1.2.3:8080": 200, "[fd00::5]:8080": 200,
		"signoff": 200, "signoff:8080": 200, "SIGNOFF.:9": 200, "gateway.internal:8443": 200,

		"": 421, "attacker.example": 421, "attacker.example:8080": 421, "evil.localhost:8080": 421,
		"localhost.attacker.example": 421, "127.0.0.1.nip.io:8080": 421, "signoff.attacker.example": 421,
		"gateway.internal": 421, "gateway.internal:8080": 421, "0x7f000001:8080": 421, "2130706433": 421,
		"[::1]x": 421, "signoffx": 421,
	} {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("Host %q: %d %s, want %d", host, w.Code, w.Body, want)
		}
	}
}

func TestParseHosts(t *testing.T) {
	got, err := httpapi.ParseHosts(" signoff, Gateway.Internal.:8443,,[fd00::1]:80 ")
	if err != nil || strings.Join(got, " ") != "signoff gateway.internal:8443 [fd00::1]:80" {
		t.Errorf("ParseHosts = %q, %v", got, err)
	}
	for _, bad := range []string{"http://signoff", "signoff:http", "signoff:0", "signoff:70000", "user@signoff", "*.example", ":8080", "a b", "<nil>", ".signoff", "a..b", "[signoff]"} {
		if _, err := httpapi.ParseHosts(bad); err == nil {
			t.Errorf("ParseHosts(%q): no error", bad)
		}
	}
}

// frozen stops the server's clock: no allowance refills during the test,
// so what is allowed is exact, not a matter of timing.
func frozen(f *authFixture) time.Time {
	at := time.Now()
	f.api.Now = func() time.Time { return at }
	return at
}

// TestFloodFromOneClientIsRateLimited: an agent loops on the API with its
// token, from many goroutines. Past the burst (40 here, to keep it quick)
// it gets 429 with Retry-After and nothing is done; another agent's token,
// and a client without one, are served as before.
func TestFloodFromOneClientIsRateLimited(t *testing.T) {
	f := authSetup(t)
	frozen(f)
	const burst = 40
	f.api.Limit, _ = httpapi.NewRateLimit(httpapi.DefaultRate, burst)
	srv := httptest.NewServer(f.api.Handler())
	defer srv.Close()
	flooder := f.mint(t, tokens.Spec{Name: "flooder", Scopes: []tokens.Scope{tokens.Request, tokens.ReadRequests}})
	other := f.mint(t, tokens.Spec{Name: "other", Scopes: []tokens.Scope{tokens.Request, tokens.ReadRequests}})
	const workers, each = 10, 8
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				req, _ := http.NewRequest("POST", srv.URL+"/v1/requests", strings.NewReader(`{"persona":"demo","action":"echo flood"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+flooder)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				var e httpapi.ErrorBody
				json.NewDecoder(resp.Body).Decode(&e)
				resp.Body.Close()
				if resp.StatusCode == 429 && (resp.Header.Get("Retry-After") != "1" || e.Code != "rate_limited" ||
					!strings.Contains(e.Error, `too many calls from token "flooder"`) || !strings.Contains(e.Error, "SIGNOFF_RATE_LIMIT")) {
					t.Errorf("429 with Retry-After %q, %+v", resp.Header.Get("Retry-After"), e)
				}
				mu.Lock()
				codes[resp.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if codes[201] != burst || codes[429] != workers*each-burst {
		t.Errorf("flood answers %v, want %d × 201 then 429s", codes, burst)
	}
	rs, _ := f.env.Store.List(context.Background(), bot.Filter{})
	if len(rs) != burst {
		t.Errorf("%d requests filed, want the %d allowed: a 429 must file nothing", len(rs), burst)
	}
	// Fairness: the flood spent only the flooder's allowance.
	if status, _, raw := call(t, srv.URL, "POST", "/v1/requests", other, `{"persona":"demo","action":"ls"}`); status != 201 {
		t.Errorf("another token during the flood: %d %s", status, raw)
	}
	if status, _, raw := call(t, srv.URL, "GET", "/healthz", "", ""); status != 200 {
		t.Errorf("a client without a token during the flood: %d %s", status, raw)
	}
	if status, _, _ := call(t, srv.URL, "GET", "/v1/requests", flooder, ""); status != 429 {
		t.Errorf("the flooder after its burst: %d, want 429", status)
	}
}

// TestFloodFromOneAddressIsRateLimited: clients without a token are told
// apart by address; a flood from one leaves another alone, and the
// addresses of one IPv6 /64 count as one client.
func TestFloodFromOneAddressIsRateLimited(t *testing.T) {
	f := authSetup(t)
	frozen(f)
	h := f.api.Handler()
	get := func(remote string) int {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host, req.RemoteAddr = "127.0.0.1:8080", remote
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	for i := range httpapi.DefaultBurst {
		if code := get(fmt.Sprintf("[2001:db8::%x]:1234", i+1)); code != 200 {
			t.Fatalf("call %d within the burst: %d", i, code)
		}
	}
	if code := get("[2001:db8::ffff]:1"); code != 429 {
		t.Errorf("another address of the same /64 past the burst: %d, want 429", code)
	}
	if code := get("[2001:db8:0:1::1]:1"); code != 200 {
		t.Errorf("the next /64: %d, want 200", code)
	}
	if code := get("192.0.2.1:1"); code != 200 {
		t.Errorf("an IPv4 client: %d, want 200", code)
	}
}

// TestLongPollCountsOnce: a wait of seconds spends one call.
func TestLongPollCountsOnce(t *testing.T) {
	f := authSetup(t)
	frozen(f)
	limit, _ := httpapi.NewRateLimit(1, 2)
	f.api.Limit = limit
	srv := httptest.NewServer(f.api.Handler())
	defer srv.Close()
	tok := f.mint(t, tokens.Spec{Name: "waiter", Scopes: []tokens.Scope{tokens.Request}})
	r := f.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "ls"})
	if status, _, raw := call(t, srv.URL, "GET", "/v1/requests/"+r.ID+"?wait=1500ms", tok, ""); status != 200 {
		t.Fatalf("wait: %d %s", status, raw)
	}
	if status, _, raw := call(t, srv.URL, "GET", "/v1/requests/"+r.ID, tok, ""); status != 200 {
		t.Fatalf("the call after a long wait: %d %s, want 200 (the wait spent one)", status, raw)
	}
	if status, _, _ := call(t, srv.URL, "GET", "/v1/requests/"+r.ID, tok, ""); status != 429 {
		t.Errorf("the third call with a burst of 2: %d, want 429", status)
	}
}

// TestForgedTokenCannotSpendAnotherClientsAllowance: token ids show in
// logs and listings; someone floods with the victim's id and a wrong
// secret. The flood spends the flooder's address's allowance (and its
// bad-token allowance), never the victim's.
func TestForgedTokenCannotSpendAnotherClientsAllowance(t *testing.T) {
	f := authSetup(t)
	frozen(f)
	victim := f.mint(t, tokens.Spec{Name: "victim", Scopes: []tokens.Scope{tokens.ReadRequests}})
	forged := victim[:len(victim)-4] + "AAAA"
	if forged == victim {
		forged = victim[:len(victim)-4] + "BBBB"
	}
	codes := map[int]int{}
	for range httpapi.DefaultBurst + 50 {
		status, _, _ := f.call(t, "GET", "/v1/requests", forged, "")
		codes[status]++
	}
	if codes[200] != 0 || codes[429] == 0 {
		t.Errorf("forged flood answers %v: want 401s then 429s", codes)
	}
	if status, _, raw := f.call(t, "GET", "/v1/requests", victim, ""); status != 200 {
		t.Errorf("the victim after a flood with its id: %d %s", status, raw)
	}
}

// TestForgedTokenFloodDoesNotGrowMemory: a flood of distinct forged tokens
// and of distinct addresses leaves the limiter holding at most 10000
// clients; once idle, they are forgotten.
func TestForgedTokenFloodDoesNotGrowMemory(t *testing.T) {
	f := authSetup(t)
	at := frozen(f)
	h := f.api.Handler()
	serve := func(remote, path, auth string) int {
		req := httptest.NewRequest("GET", path, nil)
		req.Host, req.RemoteAddr = "127.0.0.1:8080", remote
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	for i := range 3000 {
		id := make([]byte, 10)
		binary.BigEndian.PutUint32(id, uint32(i))
		forged := "sgn_" + base32.StdEncoding.EncodeToString(id) + "_" + strings.Repeat("x", 43)
		if _, _, err := tokens.ParseBearer("Bearer " + forged); err != nil {
			t.Fatalf("the forged token %s is not even well formed: %v", forged, err)
		}
		serve("192.0.2.1:1", "/v1/requests", forged)
	}
	if n := f.api.Limit.Clients(); n != 1 {
		t.Errorf("3000 forged tokens from one address: the limiter holds %d clients, want 1", n)
	}
	for i := range 15000 {
		serve(fmt.Sprintf("10.%d.%d.%d:1", i>>16, (i>>8)&255, i&255), "/healthz", "")
	}
	if n := f.api.Limit.Clients(); n > 10000 {
		t.Errorf("15000 addresses: the limiter holds %d clients, want at most 10000", n)
	}
	at = at.Add(time.Minute)
	f.api.Now = func() time.Time { return at }
	for range 6000 {
		serve("192.0.2.2:1", "/healthz", "")
		at = at.Add(time.Millisecond * 20) // 50/s: within the rate
	}
	if n := f.api.Limit.Clients(); n > 2 {
		t.Errorf("after the flood, idle: the limiter holds %d clients, want them forgotten", n)
	}
}
