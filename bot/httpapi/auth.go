package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/tokens"
)

// Access says who may call a route. Every route has one: Mux refuses to
// register a route without it, and a request whose route has none is
// refused (fail closed).
type Access struct {
	kind   accessKind
	scopes []tokens.Scope // any one of them suffices
}

// person reports whether a person's signed call (NIP-98) may stand in for
// a token: on the routes an admin token may call.
func (a Access) person() bool {
	return a.kind == accessToken && slices.Contains(a.scopes, tokens.Admin)
}

type accessKind int

const (
	accessNone   accessKind = iota // the zero Access: refused at registration
	accessPublic                   // no token: health, readiness, metrics
	accessSigned                   // no token: the body carries its own verified signature
	accessToken                    // a bearer token with one of scopes
)

var (
	// Public routes need no token (/healthz, /readyz, /metrics).
	Public = Access{kind: accessPublic}
	// SignedBody routes need no token because the handler verifies a
	// signature over the raw body before believing anything in it: the
	// platforms' webhooks, and POST /v1/nostr/events (a person's signed
	// vote; no token scope may vote).
	SignedBody = Access{kind: accessSigned}
)

// Needs is the Access of a route that a token carrying any one of scopes
// may call.
func Needs(scopes ...tokens.Scope) Access {
	if len(scopes) == 0 {
		panic("httpapi.Needs: no scope")
	}
	for _, s := range scopes {
		if !s.Valid() {
			panic(fmt.Sprintf("httpapi.Needs: unknown scope %q", s))
		}
	}
	scopes = slices.Clone(scopes)
	slices.SortFunc(scopes, func(a, b tokens.Scope) int { return slices.Index(tokens.All, a) - slices.Index(tokens.All, b) })
	return Access{kind: accessToken, scopes: slices.Compact(scopes)}
}

// Scopes are the scopes that may call the route (nil for Public and SignedBody).
func (a Access) Scopes() []tokens.Scope { return slices.Clone(a.scopes) }

func (a Access) String() string {
	switch a.kind {
	case accessPublic:
		return "public"
	case accessSigned:
		return "signed body"
	case accessToken:
		return tokens.Join(a.scopes)
	}
	return "none"
}

// Mux is the API's router: http.ServeMux, except that every route is
// registered with its Access.
type Mux struct {
	mux    *http.ServeMux
	access map[string]Access
	// observe, when set, is told each call's route and duration.
	observe func(route string, d time.Duration)
}

func newMux() *Mux { return &Mux{mux: http.NewServeMux(), access: map[string]Access{}} }

// Handle registers h for pattern, callable as a says.
func (m *Mux) Handle(pattern string, a Access, h http.Handler) {
	if a.kind == accessNone {
		panic(fmt.Sprintf("httpapi: route %q has no Access: give it Public, SignedBody or Needs(scope…)", pattern))
	}
	if obs := m.observe; obs != nil {
		next := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			next.ServeHTTP(w, r)
			obs(pattern, time.Since(start))
		})
	}
	m.mux.Handle(pattern, h)
	m.access[pattern] = a
}

// HandleFunc registers f for pattern, callable as a says.
func (m *Mux) HandleFunc(pattern string, a Access, f func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, a, http.HandlerFunc(f))
}

// Route is one registered route and who may call it.
type Route struct {
	Pattern string
	Access  Access
}

// Routes lists every route the handler serves, sorted by pattern.
func (s *Server) Routes() []Route {
	m := s.routes()
	out := make([]Route, 0, len(m.access))
	for p, a := range m.access {
		out = append(out, Route{p, a})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pattern < out[j].Pattern })
	return out
}

// TokenStore is what authentication needs from the store. Nothing is
// cached here: the store answers each call, from Redis or from what it
// remembers only while it hears of every change (quorum/redis: a token
// revoked or made on any replica holds on the others as the change's
// message reaches them).
type TokenStore interface {
	tokens.Store
	// TouchToken records that the token was used at at.
	TouchToken(ctx context.Context, id string, at time.Time) error
}

// Auth authenticates the API's callers. No call without a token or a
// person's signature ever makes a token: the tokens service
// (tokens.Service) holds those rules, and Service returns the one this
// Auth uses.
type Auth struct {
	Tokens TokenStore
	Secret tokens.Secret
	// Require refuses calls without a token even on loopback with no
	// token created (SIGNOFF_REQUIRE_TOKENS).
	Require bool
	// Audit, when set, records every 401 and 403, and every token made
	// or revoked.
	Audit bot.Auditor
	// Owners are the persona owners whose signed calls (NIP-98) are a
	// person's admin calls; nil: none are.
	Owners tokens.Owners
	// ClosedMark is the file in the gateway's data dir written once any
	// token exists ("": none, tests); History reports a token record in
	// the audit chain. See tokens.Service.
	ClosedMark string
	History    func() bool
	Logger     *slog.Logger

	svcOnce sync.Once
	svc     *tokens.Service

	once    sync.Once
	fails   *clientTable // client address → its allowance of bad tokens
	replays replaySet    // NIP-98 events already used
}

// Service is the tokens service this Auth's API calls (made on first use
// from the Auth's fields).
func (au *Auth) Service() *tokens.Service {
	au.svcOnce.Do(func() {
		au.svc = &tokens.Service{Store: au.Tokens, Secret: au.Secret, Owners: au.Owners, Audit: au.Audit,
			History: au.History, ClosedMark: au.ClosedMark, Logger: au.Logger}
	})
	return au.svc
}

// replaySet remembers the NIP-98 events used within their window, so a
// signed call seen on the wire cannot be sent again.
type replaySet struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// use reports whether id is new, and remembers it until until.
func (rs *replaySet) use(id string, now, until time.Time) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.seen == nil {
		rs.seen = map[string]time.Time{}
	}
	if len(rs.seen) > 1000 {
		for k, t := range rs.seen {
			if now.After(t) {
				delete(rs.seen, k)
			}
		}
	}
	if t, ok := rs.seen[id]; ok && !now.After(t) {
		return false
	}
	rs.seen[id] = until
	return true
}

// Bad tokens allowed per client address (IPv6: per /64) before it gets
// 429s: a burst of failBurst, then one every failEvery; at most
// maxLimiters addresses are remembered (guard.go's clientTable).
const (
	failBurst   = 10
	failEvery   = 6 * time.Second
	maxLimiters = 10000
)

type tokenKey struct{}

type personKey struct{}

// TokenFrom returns the token the call was made with; nil when the
// gateway is open (loopback, no token created yet) or a person signed it.
func TokenFrom(ctx context.Context) *tokens.Token {
	t, _ := ctx.Value(tokenKey{}).(*tokens.Token)
	return t
}

// CallerFrom is who made the call: its token, or the person who signed it.
func CallerFrom(ctx context.Context) tokens.Caller {
	if c, ok := ctx.Value(personKey{}).(tokens.Caller); ok {
		return c
	}
	return tokens.Caller{Token: TokenFrom(ctx)}
}

// AllowPersona returns a 403 error when the call's token is bound to
// personas that do not include persona. A route that acts for a persona
// named anywhere but a top-level "persona" field of its JSON body or a
// ?persona= query (which the middleware checks) must call it.
func AllowPersona(ctx context.Context, persona string) error {
	if t := TokenFrom(ctx); t != nil && !t.AllowsPersona(persona) {
		return t.PersonaError(persona)
	}
	return nil
}

// authorize wraps the mux: it finds the route's Access and lets the call
// through only when the caller meets it and is within its rate (guard.go).
func (s *Server) authorize(m *Mux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := m.mux.Handler(r)
		if pattern == "" { // no route: the mux answers 404 or 405
			if !s.limited(w, r, nil) {
				m.mux.ServeHTTP(w, r)
			}
			return
		}
		a, ok := m.access[pattern]
		if !ok || a.kind == accessNone {
			s.log().Error("route without access rule refused", "pattern", pattern)
			s.fail(w, r, bot.Errorf(bot.EForbidden, "route %q has no access rule", pattern))
			return
		}
		if a.kind == accessPublic || a.kind == accessSigned {
			if !s.limited(w, r, s.presented(r)) {
				m.mux.ServeHTTP(w, r)
			}
			return
		}
		if tokens.IsHTTPAuth(r.Header.Get("Authorization")) {
			s.personCall(w, r, m, a)
			return
		}
		t, err := s.authenticate(r)
		// The allowance spent is the token's only once it verified; a bad
		// or no token spends its address's.
		var verified *tokens.Token
		if err == nil {
			verified = t
		}
		if s.limited(w, r, verified) {
			return
		}
		if err != nil {
			s.refuse(w, r, t, a, err)
			return
		}
		if t != nil {
			s.touch(r, t)
			if !t.Has(a.scopes...) {
				s.refuse(w, r, t, a, tokens.Lacks(t.Name, a.scopes))
				return
			}
			if err := bodyInScope(w, r, t, a); err != nil {
				s.refuse(w, r, t, a, err)
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), tokenKey{}, t))
		}
		m.mux.ServeHTTP(w, r)
	})
}

// personCall lets in an admin call a person signed (NIP-98): the event
// must say this call (URL, method, body), now, be signed by an owner of a
// loaded persona, and not have been used before.
func (s *Server) personCall(w http.ResponseWriter, r *http.Request, m *Mux, a Access) {
	fail := func(err error) {
		if !s.limited(w, r, nil) {
			s.refuse(w, r, nil, a, err)
		}
	}
	if !a.person() {
		fail(bot.Errorf(bot.EUnauthorized, "NIP-98 authorization: a person's signature stands in for an admin token only on admin routes; this one needs a token with scope %s", tokens.Join(a.scopes)))
		return
	}
	if s.Auth == nil || s.Auth.Tokens == nil {
		fail(bot.Errorf(bot.EUnauthorized, "this gateway has no tokens configured"))
		return
	}
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
		if err != nil {
			s.fail(w, r, bodyError(err))
			return
		}
		body = raw
		r.Body = io.NopCloser(bytes.NewReader(raw))
	}
	now := s.now()
	proof, err := tokens.ParseHTTPAuth(r.Header.Get("Authorization"), tokens.Call{Method: r.Method, URL: callURL(r), Body: body}, now)
	if err != nil {
		fail(err)
		return
	}
	c, err := s.Auth.Service().Person(r.Context(), proof)
	if err != nil {
		fail(err)
		return
	}
	var ev struct {
		ID string `json:"id"`
	}
	json.Unmarshal(proof.Event, &ev)
	if !s.Auth.replays.use(ev.ID, now, now.Add(2*tokens.HTTPAuthWindow)) {
		fail(bot.Errorf(bot.EUnauthorized, "NIP-98 authorization: this signed call was already used; sign it again"))
		return
	}
	if s.limited(w, r, nil) {
		return
	}
	m.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), personKey{}, c)))
}

// callURL is the absolute URL the caller asked for, as a NIP-98 event
// names it.
func callURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + r.URL.RequestURI()
}

// presented is the verified token a call to a route that needs none
// carries (a person's `signoff approve` sends one), so that it spends its
// own allowance, not its address's; nil when it carries none or a bad one
// (the route does not refuse it for that).
func (s *Server) presented(r *http.Request) *tokens.Token {
	if s.Limit == nil || r.Header.Get("Authorization") == "" || s.Auth == nil || s.Auth.Tokens == nil {
		return nil
	}
	t, err := tokens.Authenticate(r.Context(), s.Auth.Tokens, s.Auth.Secret, r.Header.Get("Authorization"), s.now())
	if err != nil {
		return nil
	}
	return t
}

// authenticate returns the call's token, or nil and no error when the
// gateway is open to this caller without one.
func (s *Server) authenticate(r *http.Request) (*tokens.Token, error) {
	h := r.Header.Get("Authorization")
	au := s.Auth
	if h == "" {
		if !loopback(r) {
			return nil, tokens.ErrNoToken
		}
		if au == nil {
			return nil, nil
		}
		if au.Require {
			return nil, tokens.ErrNoToken
		}
		shut, err := au.Service().Closed(r.Context())
		if err != nil {
			return nil, err
		}
		if shut {
			return nil, au.noTokenError()
		}
		return nil, nil
	}
	if au == nil || au.Tokens == nil {
		return nil, bot.Errorf(bot.EUnauthorized, "this gateway has no tokens configured")
	}
	return tokens.Authenticate(r.Context(), au.Tokens, au.Secret, h, s.now())
}

// touch records a token's use, at most once a minute.
func (s *Server) touch(r *http.Request, t *tokens.Token) {
	now := s.now()
	if now.Sub(t.LastUsed) >= time.Minute {
		if err := s.Auth.Tokens.TouchToken(r.Context(), t.ID, now); err != nil {
			s.log().Warn("cannot record a token's last use", "token", t.Name, "err", err)
		}
	}
}

// noTokenError is ErrNoToken, or, when the store lost its tokens, what
// happened and what a person can do.
func (au *Auth) noTokenError() error {
	if au.Service().Lost() != "" {
		return bot.Errorf(bot.EUnauthorized, "this gateway requires a token, and its store holds none although it had some (Redis emptied or restarted without persistence?): a person makes a new one with their key (signoff tokens create --name me --scopes admin), or restores the store")
	}
	return tokens.ErrNoToken
}

// bodyInScope refuses a persona-bound token naming another persona in
// the JSON body's top-level "persona" field or the ?persona= query, and a
// token with declared network doors asking (net:request) for a "host" and
// "port" outside them.
func bodyInScope(w http.ResponseWriter, r *http.Request, t *tokens.Token, a Access) error {
	doors := len(t.Network) > 0 && slices.Contains(a.scopes, tokens.NetRequest)
	if len(t.Personas) == 0 && !doors {
		return nil
	}
	for _, p := range r.URL.Query()["persona"] {
		if !t.AllowsPersona(p) {
			return t.PersonaError(p)
		}
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		return bodyError(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil // not a JSON object: the handler refuses it
	}
	// encoding/json matches field names case-insensitively (PERSONA,
	// Persona, perſona all reach a `json:"persona"` field), and a repeated
	// key's last value wins: check every key that folds to the name.
	var hosts []string
	var ports []int
	for k, v := range top {
		switch {
		case strings.EqualFold(k, "persona") && len(t.Personas) > 0:
			var name string
			if json.Unmarshal(v, &name) != nil || !t.AllowsPersona(name) {
				return t.PersonaError(name)
			}
		case strings.EqualFold(k, "host") && doors:
			var host string
			json.Unmarshal(v, &host)
			hosts = append(hosts, host)
		case strings.EqualFold(k, "port") && doors:
			var port int
			json.Unmarshal(v, &port)
			ports = append(ports, port)
		}
	}
	if len(hosts) > 0 && len(ports) == 0 {
		ports = []int{0}
	}
	for _, host := range hosts {
		for _, port := range ports {
			if !t.AllowsDoor(host, port) {
				return bot.Errorf(bot.EForbidden, "token %q may ask only for %s, not %s:%d", t.Name, strings.Join(t.Network, ", "), host, port)
			}
		}
	}
	return nil
}

// refuse answers a 401 or 403, audits it with the token's name, and past a
// burst of bad tokens from one address answers 429 without auditing each.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, t *tokens.Token, a Access, err error) {
	code := bot.ErrorCode(err)
	audit := code == bot.EUnauthorized || code == bot.EForbidden
	if code == bot.EUnauthorized && s.Auth != nil && !s.Auth.allowFailure(clientAddr(r), s.now()) {
		if r.Header.Get("Authorization") != "" {
			// Someone trying tokens: slow them down. Refused before the
			// audit or anything else is done.
			const msg = "too many calls with a bad token from this address; wait and retry with a valid one"
			w.Header().Set("Retry-After", fmt.Sprint(int(failEvery.Seconds())))
			writeJSON(w, http.StatusTooManyRequests, ErrorBody{Error: msg, Code: ERateLimited})
			s.rateLimited(r, bot.LimitBadToken, clientAddr(r), "address "+peer(r), failEvery, msg)
			return
		}
		// A client without a token guesses nothing: it gets its 401, but a
		// flood of them is not audited call by call.
		audit = false
	}
	if audit {
		s.auditRefusal(r, t, a, err)
	}
	if code == bot.EUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="signoff"`)
		if a.person() {
			w.Header().Add("WWW-Authenticate", `Nostr realm="signoff"`)
		}
	}
	s.fail(w, r, err)
}

// AuthRefusal is the audit record of a 401 or 403.
type AuthRefusal struct {
	Result string `json:"result"` // unauthorized, forbidden
	Token  string `json:"token,omitempty"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Needs  string `json:"needs"`
	Remote string `json:"remote"`
	Reason string `json:"reason"`
}

func (s *Server) auditRefusal(r *http.Request, t *tokens.Token, a Access, err error) {
	rec := AuthRefusal{Result: bot.ErrorCode(err), Method: r.Method, Path: r.URL.Path, Needs: a.String(), Remote: peer(r), Reason: bot.ErrorMessage(err)}
	if t != nil {
		rec.Token = t.Name
	}
	s.log().Warn("api call refused", "result", rec.Result, "token", rec.Token, "method", rec.Method, "path", rec.Path, "remote", rec.Remote, "reason", rec.Reason)
	if s.Auth == nil || s.Auth.Audit == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 3*time.Second)
	defer cancel()
	if err := s.Auth.Audit.Append(ctx, bot.AuditEntry{Type: "auth", Data: rec}); err != nil {
		s.log().Error("cannot audit a refused call", "err", err)
	}
}

func (au *Auth) allowFailure(addr string, now time.Time) bool {
	au.once.Do(func() { au.fails = newClientTable(rate.Every(failEvery), failBurst, maxLimiters) })
	ok, _ := au.fails.take(addr, now)
	return ok
}

// peer is the caller's address without the port.
func peer(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// loopback reports whether the call came from this machine. A call that
// carries forwarding headers came through a reverse proxy — on this
// machine, maybe, but on behalf of someone who need not be — so it is not.
func loopback(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip", "X-Forwarded-Host"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	ip, err := netip.ParseAddr(strings.Trim(peer(r), "[]"))
	return err == nil && ip.Unmap().IsLoopback()
}

// platformAccess is the Access of a Server.Extra route: the platforms'
// signed webhooks (/slack/…, /discord/interactions) verify their own
// signatures; any other extra route is a programming error.
func platformAccess(pattern string) Access {
	_, path, _ := strings.Cut(pattern, " ")
	if strings.HasPrefix(path, "/slack/") || path == "/discord/interactions" {
		return SignedBody
	}
	panic(fmt.Sprintf("httpapi: Extra route %q is not a platform webhook; register it with its Access", pattern))
}

// onlyAllowed keeps the requests of the personas the call's token may see.
func onlyAllowed(ctx context.Context, rs []*bot.Request) []*bot.Request {
	t := TokenFrom(ctx)
	if t == nil || len(t.Personas) == 0 {
		return rs
	}
	return slices.DeleteFunc(rs, func(r *bot.Request) bool { return !t.AllowsPersona(r.Persona) })
}
