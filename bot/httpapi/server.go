// Package httpapi is signoff's HTTP API: the server that exposes the
// gateway (bot.Service and bot.VoteSink) as JSON, and the client the CLI
// uses to reach it. It alone maps bot error codes to HTTP statuses.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/permissions"
	"github.com/signoff/signoff/bot/steptrace"
	"github.com/signoff/signoff/bot/tokens"
	"github.com/signoff/signoff/signing"
)

// MaxBody caps every request body.
const MaxBody = 1 << 20

// SubmitTimeout bounds a submit, which its caller cannot cut short.
const SubmitTimeout = 60 * time.Second

// MaxWait caps ?wait= on GET /v1/requests/{id}.
const MaxWait = 60 * time.Second

// Gateway is what the server needs from the gateway.
type Gateway interface {
	bot.Service
	bot.VoteSink
	Record(ctx context.Context, n bot.NewRequest) (bot.Assessment, error)
}

// Server serves the API. Extra holds platform endpoints mounted as given
// ("POST /slack/events" → handler); nil entries are skipped.
type Server struct {
	Gateway Gateway
	Ready   func(ctx context.Context) error // the store answers
	Metrics http.Handler
	Extra   map[string]http.Handler
	Logger  *slog.Logger
	Now     func() time.Time
	// Auth checks bearer tokens. Nil: calls from loopback need no token
	// and all others are refused (tests; the embedded default).
	Auth *Auth
	// Network serves the network routes (network.go); nil: none.
	Network Network
	// Classifier serves POST /v1/classify (classify.go); nil: no route.
	Classifier bot.Classifier
	// Console serves the web console (console.go); nil: none.
	Console *Console
	// Checker decides POST /v1/check and keeps grants (check.go).
	Checker *permissions.Checker
	// OnCheck, when set, is told each /v1/check decision (a metric).
	OnCheck func(decision string)
	// ObserveRoute, when set, is told how long each routed call took,
	// by its pattern (a metric).
	ObserveRoute func(route string, d time.Duration)
	// AllowedHosts are the names, besides localhost and IP addresses, a
	// call's Host may give (ParseHosts, SIGNOFF_ALLOWED_HOSTS); any other
	// Host is refused with 421 (guard.go: DNS rebinding).
	AllowedHosts []string
	// Limit is the per-client rate limit on every route; nil: none.
	Limit *RateLimit
	// OnRateLimited, when set, is told of every 429, by the limit that
	// answered it (bot.LimitClient, LimitBadToken, LimitPublish): serve
	// counts them (bot.Metrics.RateLimited). limited.go logs them.
	OnRateLimited func(limit string)

	refusals *refusalLog // made by Handler
}

// Handler returns the API's routes, each behind its Access (auth.go),
// behind the Host and cross-site checks (guard.go).
func (s *Server) Handler() http.Handler {
	s.refusals = &refusalLog{}
	return s.checkHost(s.checkBrowser(s.authorize(s.routes())))
}

// routes registers every route with who may call it. A route of your own:
// one line here calling a func in your file that uses mux.HandleFunc(pattern,
// Needs(tokens.X), h) — see auth.go.
func (s *Server) routes() *Mux {
	mux := newMux()
	mux.observe = s.ObserveRoute
	mux.HandleFunc("POST /v1/requests", Needs(tokens.Request), s.submit)
	mux.HandleFunc("GET /v1/requests", Needs(tokens.ReadRequests), s.list)
	mux.HandleFunc("GET /v1/requests/{id}", Needs(tokens.Request, tokens.Check, tokens.ReadRequests), s.get)
	mux.HandleFunc("POST /v1/requests/{id}/withdraw", Needs(tokens.Request), s.withdraw)
	mux.HandleFunc("POST /v1/actions", Needs(tokens.Check, tokens.Request), s.record)
	mux.HandleFunc("POST /v1/nostr/events", SignedBody, s.nostrEvent)
	mux.HandleFunc("GET /healthz", Public, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", Public, s.ready)
	s.tokenRoutes(mux)
	s.classifyRoutes(mux)
	s.networkRoutes(mux)
	s.checkRoutes(mux)
	s.publishRoutes(mux)
	s.consoleRoutes(mux)
	if s.Metrics != nil {
		mux.Handle("GET /metrics", Public, s.Metrics)
	}
	for pattern, h := range s.Extra {
		if h != nil {
			mux.Handle(pattern, platformAccess(pattern), http.MaxBytesHandler(h, MaxBody))
		}
	}
	return mux
}

func (s *Server) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	var n bot.NewRequest
	if err := decode(w, r, &n); err != nil {
		s.fail(w, r, err)
		return
	}
	// A caller that goes away mid-submit must not leave a request half
	// posted (cards up, not recorded): the gateway finishes it, and the
	// requester's client (withdraw_on_disconnect) then has it withdrawn.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), SubmitTimeout)
	defer cancel()
	req, err := s.Gateway.Submit(ctx, n)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.expectHeld(r, req)
	writeJSON(w, http.StatusCreated, req)
}

// record logs an action that ran without asking (caution level).
func (s *Server) record(w http.ResponseWriter, r *http.Request) {
	var n bot.NewRequest
	if err := decode(w, r, &n); err != nil {
		s.fail(w, r, err)
		return
	}
	a, err := s.Gateway.Record(r.Context(), n)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, a)
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var (
		req *bot.Request
		err error
	)
	if wait := r.URL.Query().Get("wait"); wait != "" {
		d, perr := time.ParseDuration(wait)
		if perr != nil || d < 0 {
			s.fail(w, r, bot.Errorf(bot.EInvalid, "wait %q is not a duration such as 30s", wait))
			return
		}
		if t := TokenFrom(r.Context()); t != nil && len(t.Personas) > 0 {
			// Refuse another persona's request before waiting on it.
			if req, err = s.Gateway.Get(r.Context(), id); err == nil {
				err = AllowPersona(r.Context(), req.Persona)
			}
			if err != nil {
				s.fail(w, r, err)
				return
			}
		}
		seen := -1
		if v := r.URL.Query().Get("seen"); v != "" {
			n, perr := strconv.Atoi(v)
			if perr != nil || n < 0 {
				s.fail(w, r, bot.Errorf(bot.EInvalid, "seen %q is not a count of answers (the %s header of the last answer)", v, SeenHeader))
				return
			}
			seen = n
		}
		if s.park(w, r, id, min(d, MaxWait), seen) {
			return
		}
		req, err = s.wait(r, id, min(d, MaxWait), seen)
	} else {
		req, err = s.Gateway.Get(r.Context(), id)
	}
	s.answerGet(w, r, req, err)
}

// answerGet writes GET /v1/requests/{id}'s answer (park.go writes it on a
// parked connection).
func (s *Server) answerGet(w http.ResponseWriter, r *http.Request, req *bot.Request, err error) {
	if err == nil {
		err = AllowPersona(r.Context(), req.Persona)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Status == bot.Pending {
		// What this answer showed, for the client's next long-poll.
		w.Header().Set(SeenHeader, strconv.Itoa(req.Seen))
	}
	writeJSON(w, http.StatusOK, req)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	st := bot.Status(r.URL.Query().Get("status"))
	switch st {
	case "", bot.Pending, bot.Approved, bot.Denied, bot.Expired, bot.Withdrawn:
	default:
		s.fail(w, r, bot.Errorf(bot.EInvalid, "status %q is not one of pending, approved, denied, expired, withdrawn", st))
		return
	}
	rs, err := s.Gateway.List(r.Context(), bot.Filter{Status: st})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rs = onlyAllowed(r.Context(), rs)
	if rs == nil {
		rs = []*bot.Request{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"requests": rs})
}

// VoteResponse answers POST /v1/nostr/events.
type VoteResponse struct {
	Result bot.Result `json:"result"`
	Reason string     `json:"reason,omitempty"`
	Status bot.Status `json:"status"`
	ID     string     `json:"request_id"`
}

// nostrEvent takes a signed NIP-25 reaction. The raw body is verified
// before anything in it is believed.
func (s *Server) nostrEvent(w http.ResponseWriter, r *http.Request) {
	// While `signoff bench` records where a vote's time goes, its steps
	// are marked along the way (steptrace; otherwise a no-op).
	ctx := steptrace.Start(r.Context())
	defer steptrace.End(ctx, StepAfterAnswer)
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		s.fail(w, r, bodyError(err))
		return
	}
	steptrace.Mark(ctx, StepRead)
	re, err := signing.ParseReaction(raw, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	steptrace.Mark(ctx, StepVerify)
	// A decision's seal starts once the voter has its answer (it is
	// started by the deferred Run on every way out).
	ctx, later := bot.WithAfterResponse(ctx)
	defer later.Run()
	out, err := s.Gateway.CastVote(ctx, re.Ballot(raw))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	steptrace.Mark(ctx, StepOutcome)
	writeJSONNow(w, http.StatusOK, VoteResponse{Result: out.Result, Reason: out.Reason, Status: out.Status, ID: out.RequestID})
	steptrace.Mark(ctx, StepAnswer)
}

// The steps of a vote the API marks (steptrace), for `signoff bench`.
const (
	StepRead        = "read the body"
	StepVerify      = "verify: event id and BIP-340 signature"
	StepOutcome     = "after the tally: its outcome, this replica's waiters"
	StepAnswer      = "write the answer"
	StepAfterAnswer = "after the answer, in the handler"
)

// readyTimeout bounds GET /readyz's check of the store.
const readyTimeout = 2 * time.Second

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if s.Ready != nil {
		if err := s.Ready(ctx); err != nil {
			msg := bot.ErrorMessage(err)
			if ctx.Err() != nil { // a store that does not answer at all (its host down, say)
				msg = "the store did not answer within " + readyTimeout.String()
			}
			s.fail(w, r, bot.Errorf(bot.EUnavailable, "not ready: %s", msg))
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func decode(w http.ResponseWriter, r *http.Request, v any) error {
	// A body must say it is JSON: a cross-site form or a no-cors fetch
	// cannot send that type without a preflight (issue 9, attack 8).
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return bot.Errorf(EUnsupportedMedia, "send the body with Content-Type: application/json")
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if e := bodyError(err); bot.ErrorCode(e) == bot.ETooLarge {
			return e
		}
		if _, ok := errors.AsType[*bot.Error](err); ok {
			return err
		}
		return bot.Errorf(bot.EInvalid, "request body is not valid JSON: %v", err)
	}
	if dec.More() {
		return bot.Errorf(bot.EInvalid, "request body has data after the JSON object")
	}
	return nil
}

func bodyError(err error) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return bot.Errorf(bot.ETooLarge, "request body is larger than %d bytes", MaxBody)
	}
	return bot.Errorf(bot.EInvalid, "cannot read request body: %v", err)
}

// EUnsupportedMedia is a body not sent as application/json (415).
const EUnsupportedMedia = "unsupported_media_type"

// ErrorBody is every error response: {"error": "...", "code": "..."}.
type ErrorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

var statuses = map[string]int{
	bot.EInvalid:      http.StatusBadRequest,
	bot.ENotFound:     http.StatusNotFound,
	bot.EUnauthorized: http.StatusUnauthorized,
	bot.EStale:        http.StatusBadRequest,
	bot.EConflict:     http.StatusConflict,
	bot.ETooLarge:     http.StatusRequestEntityTooLarge,
	bot.EForbidden:    http.StatusForbidden,
	bot.EUnavailable:  http.StatusServiceUnavailable,
	bot.EInternal:     http.StatusInternalServerError,
	bot.ERateLimited:  http.StatusTooManyRequests,
	EUnsupportedMedia: http.StatusUnsupportedMediaType,
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := bot.ErrorCode(err)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		code = bot.EUnavailable
		err = bot.Errorf(code, "request cancelled or timed out")
	}
	status := statuses[code]
	if code == bot.ERateLimited {
		w.Header().Set("Retry-After", retryAfter(err))
	}
	if code == bot.EInternal || code == bot.EUnavailable {
		s.log().Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, status, ErrorBody{Error: bot.ErrorMessage(err), Code: code})
}

// retryAfter is the Retry-After of a rate-limited error: its RetryAfter
// in whole seconds, rounded up, at least 1.
func retryAfter(err error) string {
	var d time.Duration
	if e, ok := errors.AsType[*bot.Error](err); ok {
		d = e.RetryAfter
	}
	return strconv.Itoa(retrySeconds(d))
}

func retrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// writeJSON writes v as the answer, its length told: one write, never
// chunked (an answer past net/http's 2 KB buffer would be sent in chunks,
// a write for each and one for the end).
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	b, err := json.Marshal(v)
	if err != nil {
		w.WriteHeader(status) // as an encoder's failure left it: no body
		return
	}
	b = append(b, '\n')
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// writeJSONNow is writeJSON sent at once, so the client has its answer
// while the handler goes on.
func writeJSONNow(w http.ResponseWriter, status int, v any) {
	writeJSON(w, status, v)
	_ = http.NewResponseController(w).Flush()
}
