package httpapi

import (
	"container/list"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/tokens"
)

// The guards in front of every route: the Host check (DNS rebinding), the
// cross-site browser check (CSRF) and the per-client rate limit.

// EMisdirected is a call whose Host this gateway does not serve (421).
const EMisdirected = "misdirected_host"

// ERateLimited is a call over its client's rate limit (429).
const ERateLimited = bot.ERateLimited

// ParseHosts reads SIGNOFF_ALLOWED_HOSTS: names separated by commas, each
// "host" (any port) or "host:port" (that port only). Names are compared
// without case and without a trailing dot.
func ParseHosts(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		host, port, err := splitHost(f)
		_, ipErr := netip.ParseAddr(host)
		if err != nil || !hostName(host) || (strings.HasPrefix(f, "[") && ipErr != nil) {
			return nil, fmt.Errorf("%q is not a host or host:port (example: signoff.internal,signoff:8080)", f)
		}
		if port != "" {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("%q: port %q is not 1-65535", f, port)
			}
		}
		out = append(out, canonHost(host, port))
	}
	return out, nil
}

// hostName reports whether s is an IP address or a DNS name (letters,
// digits, '-', '_', dots).
func hostName(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	if s == "" || strings.HasPrefix(s, ".") || strings.Contains(s, "..") {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// splitHost splits "host", "host:port", "[v6]" and "[v6]:port".
func splitHost(s string) (host, port string, err error) {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		return s[1 : len(s)-1], "", nil
	}
	if strings.Count(s, ":") == 0 {
		return s, "", nil
	}
	if strings.Count(s, ":") > 1 && !strings.HasPrefix(s, "[") {
		return s, "", nil // a bare IPv6 address
	}
	return net.SplitHostPort(s)
}

func canonHost(host, port string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if port == "" {
		return host
	}
	return net.JoinHostPort(host, port)
}

// ServesHost reports whether a call with this Host header is for this
// gateway. Always: an IP address (no DNS name, so no rebinding can produce
// it: loopback, the pod IP a Kubernetes probe sends, the address a peer
// dialled) and localhost. Else only a name in AllowedHosts. A page whose
// name was rebound to 127.0.0.1 makes the browser send that name — never
// one of these — so its calls are refused.
func (s *Server) ServesHost(h string) bool {
	host, port, err := splitHost(h)
	if err != nil || host == "" {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if _, err := netip.ParseAddr(host); err == nil || host == "localhost" {
		return true
	}
	for _, a := range s.AllowedHosts {
		if a == host || (port != "" && a == net.JoinHostPort(host, port)) {
			return true
		}
	}
	return false
}

// checkHost refuses, before anything else is done, a call whose Host this
// gateway does not serve.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.ServesHost(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		s.log().Debug("call for a host not served refused", "host", r.Host, "remote", peer(r), "path", r.URL.Path)
		writeJSON(w, http.StatusMisdirectedRequest, ErrorBody{
			Error: fmt.Sprintf("this gateway does not serve host %q (a web page whose name was rebound to this address would send it): "+
				"call it by IP address or localhost, or, if that is a name it is meant to be reached by, add it to SIGNOFF_ALLOWED_HOSTS", r.Host),
			Code: EMisdirected,
		})
	})
}

// checkBrowser refuses a call a browser made for another site's page:
// Sec-Fetch-Site other than same-origin or none (the person opened the URL
// themselves), or an Origin that is not this Host. No web page is a client
// of this API, and a cross-site call needs no body to do harm (a bodiless
// withdraw, a wait with withdraw_on_disconnect that the page aborts).
// Clients that are not browsers send neither header.
func (s *Server) checkBrowser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site := r.Header.Get("Sec-Fetch-Site")
		origin := r.Header.Get("Origin")
		bad := site != "" && site != "same-origin" && site != "none"
		if origin != "" && !bad {
			u, err := url.Parse(origin)
			bad = err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host)
		}
		if !bad {
			next.ServeHTTP(w, r)
			return
		}
		s.log().Debug("cross-site browser call refused", "origin", origin, "sec_fetch_site", site, "path", r.URL.Path)
		writeJSON(w, http.StatusForbidden, ErrorBody{
			Error: fmt.Sprintf("cross-site browser call refused (Origin %q, Sec-Fetch-Site %q): no web page may call this API; use signoff's CLI, hook or MCP server", origin, site),
			Code:  bot.EForbidden,
		})
	})
}

// Default per-client rate: a person's CLI, an agent's hook on every tool
// call and a few parallel sub-agents sharing one token stay far below 50
// calls a second; 200 at once covers a script's burst. A runaway loop or a
// flood is cut to 50/s.
const (
	DefaultRate  = 50
	DefaultBurst = 200
)

// RateLimit is the per-client allowance on every route: a token bucket of
// Burst calls refilled at Rate a second. A client is the token it presents
// (once the token verifies: a forged one naming another's id cannot spend
// that client's allowance), else its address (IPv6: its /64). A long-poll
// counts once per call.
type RateLimit struct {
	Rate    float64
	Burst   int
	clients *clientTable
}

// NewRateLimit returns the limit, or nil (no limit) when perSecond is 0.
func NewRateLimit(perSecond float64, burst int) (*RateLimit, error) {
	switch {
	case perSecond == 0:
		return nil, nil
	case perSecond < 0 || math.IsNaN(perSecond) || math.IsInf(perSecond, 0):
		return nil, fmt.Errorf("SIGNOFF_RATE_LIMIT %v: give calls a second per client (0: no limit)", perSecond)
	case burst < 1:
		return nil, fmt.Errorf("SIGNOFF_RATE_BURST %d: give at least 1 (calls a client may make at once)", burst)
	}
	return &RateLimit{Rate: perSecond, Burst: burst, clients: newClientTable(rate.Limit(perSecond), burst, maxLimiters)}, nil
}

// Clients is how many clients the limit remembers (at most 10000).
func (l *RateLimit) Clients() int { return l.clients.len() }

// limited answers 429 and reports true when the call's client is over its
// rate. t is the call's verified token, nil when it has none.
func (s *Server) limited(w http.ResponseWriter, r *http.Request, t *tokens.Token) bool {
	l := s.Limit
	if l == nil {
		return false
	}
	key, who := "ip "+clientAddr(r), "address "+peer(r)
	if t != nil {
		key, who = "token "+t.ID, fmt.Sprintf("token %q", t.Name)
	}
	ok, wait := l.clients.take(key, s.now())
	if ok {
		return false
	}
	secs := retrySeconds(wait)
	msg := fmt.Sprintf("too many calls from %s: the limit is %g a second, %d at once (SIGNOFF_RATE_LIMIT, SIGNOFF_RATE_BURST); retry in %ds", who, l.Rate, l.Burst, secs)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeJSON(w, http.StatusTooManyRequests, ErrorBody{Error: msg, Code: ERateLimited})
	s.rateLimited(r, bot.LimitClient, key, who, time.Duration(secs)*time.Second, msg)
	return true
}

// clientAddr is the caller's address as a rate-limit key: IPv4 as is,
// IPv6 by its /64 (one host usually holds a whole /64).
func clientAddr(r *http.Request) string {
	ip, err := netip.ParseAddr(strings.Trim(peer(r), "[]"))
	if err != nil {
		return peer(r)
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// clientTable is a token bucket per client, in bounded memory: at most
// size clients, the least recently seen forgotten first; a client idle long
// enough for its bucket to be full again is forgotten as it is passed
// (forgetting it loses nothing: a new bucket is a full one).
type clientTable struct {
	mu     sync.Mutex
	every  rate.Limit
	burst  int
	size   int
	refill time.Duration
	byKey  map[string]*list.Element
	lru    list.List // of *client, most recently seen first
}

type client struct {
	key  string
	lim  *rate.Limiter
	seen time.Time
}

func newClientTable(every rate.Limit, burst, size int) *clientTable {
	return &clientTable{
		every: every, burst: burst, size: size,
		refill: time.Duration(float64(burst) / float64(every) * float64(time.Second)),
		byKey:  map[string]*list.Element{},
	}
}

// take spends one call of key's allowance at now; when there is none it
// reports false and how long until there is.
func (t *clientTable) take(key string, now time.Time) (bool, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// Forget up to two idle clients per call: the table shrinks as fast
	// as it can grow.
	for range 2 {
		e := t.lru.Back()
		if e == nil || e.Value.(*client).key == key || now.Sub(e.Value.(*client).seen) < t.refill {
			break
		}
		t.remove(e)
	}
	e := t.byKey[key]
	if e == nil {
		for t.lru.Len() >= t.size {
			t.remove(t.lru.Back())
		}
		e = t.lru.PushFront(&client{key: key, lim: rate.NewLimiter(t.every, t.burst)})
		t.byKey[key] = e
	} else {
		t.lru.MoveToFront(e)
	}
	c := e.Value.(*client)
	c.seen = now
	if c.lim.AllowN(now, 1) {
		return true, 0
	}
	need := 1 - c.lim.TokensAt(now)
	return false, time.Duration(need / float64(t.every) * float64(time.Second))
}

func (t *clientTable) remove(e *list.Element) {
	delete(t.byKey, e.Value.(*client).key)
	t.lru.Remove(e)
}

func (t *clientTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lru.Len()
}
