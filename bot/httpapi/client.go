package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/tokens"
)

// Client reaches a gateway's API. It implements bot.Service.
type Client struct {
	BaseURL string
	HTTP    *http.Client
	// WithdrawOnDisconnect marks this client as the requester: should it
	// go away mid-wait, the gateway withdraws the request.
	WithdrawOnDisconnect bool
	// Token, when set, is sent as "Authorization: Bearer <Token>".
	Token string
	// Person, when set, signs each call as the person (NIP-98: it returns
	// the Authorization header for the call); it is sent instead of Token.
	Person func(ctx context.Context, call tokens.Call) (string, error)
	// OnRetry, when set, is told before each wait of a call the gateway
	// refused with 429: how long, and the gateway's message.
	OnRetry func(wait time.Duration, msg string)

	seen seenAnswers
}

// SeenHeader carries a pending request's Seen on GET /v1/requests/{id}
// answers; a client's next long-poll on it passes it back as ?seen=.
const SeenHeader = "Signoff-Seen"

// seenAnswers remembers, for each request this client waits on, the Seen
// of the gateway's last answer, sent back with the next wait on it: the
// gateway then answers at once when the request changed in between, and
// parks the wait without reading the whole request again when it did not.
// A request is forgotten once final; past seenMax all are.
type seenAnswers struct {
	mu sync.Mutex
	m  map[string]int
}

const seenMax = 10000

func (s *seenAnswers) get(id string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.m[id]
	return n, ok
}

func (s *seenAnswers) set(id string, r *bot.Request, h http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := strconv.Atoi(h.Get(SeenHeader))
	if r.Status.Final() || err != nil || n < 0 {
		delete(s.m, id)
		return
	}
	if s.m == nil || len(s.m) >= seenMax {
		s.m = map[string]int{}
	}
	s.m[id] = n
}

var _ bot.Service = (*Client)(nil)

// NewClient returns a client for the gateway at base.
func NewClient(base string) *Client {
	return &Client{BaseURL: strings.TrimRight(base, "/"), HTTP: &http.Client{}}
}

// A call the gateway refused with 429 was not done, whichever limit
// refused it: the per-client rate and the bad-token allowance answer
// before the route is reached, the publish rate before anything is posted
// or audited. So every call is tried again after the Retry-After it was
// given, within these bounds and its context's deadline.
const (
	// RetryTries is how many times a call is tried again.
	RetryTries = 5
	// RetryMaxWait is the longest one wait: a gateway asking for more
	// is not waited for (the call fails at once, saying so).
	RetryMaxWait = 30 * time.Second
	// RetryBudget is the most a call waits in all.
	RetryBudget = 60 * time.Second
	// retryGuess is the wait when Retry-After is absent or garbled,
	// doubled at each such retry.
	retryGuess = time.Second
)

func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	_, err := c.doHeader(ctx, method, path, contentType, body, out)
	return err
}

// doHeader is do, returning the answer's header too.
func (c *Client) doHeader(ctx context.Context, method, path, contentType string, body []byte, out any) (http.Header, error) {
	var waited time.Duration
	guess := retryGuess
	for try := 1; ; try++ {
		resp, b, err := c.send(ctx, method, path, contentType, body)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusTooManyRequests {
			return resp.Header, answer(resp, b, out)
		}
		msg := resp.Status
		if e := (ErrorBody{}); json.Unmarshal(b, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		wait, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		if !ok {
			wait, guess = guess, 2*guess
		}
		if err := retryAllowed(ctx, try, waited, wait, msg); err != nil {
			return nil, err
		}
		if c.OnRetry != nil {
			c.OnRetry(wait, msg)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		waited += wait
	}
}

// retryAllowed returns the error a rate-limited call ends with when it
// may not wait wait and try again: its tries or budget spent, a wait too
// long, or its deadline before the wait's end.
func retryAllowed(ctx context.Context, try int, waited, wait time.Duration, msg string) error {
	fail := func(format string, args ...any) error {
		e := bot.Errorf(bot.ERateLimited, "the gateway is rate limiting this client (%s); "+format, append([]any{msg}, args...)...)
		e.RetryAfter = wait
		return e
	}
	switch dl, ok := ctx.Deadline(); {
	case wait > RetryMaxWait:
		return fail("it asks to wait %s, more than the %s signoff waits: try again later", wait, RetryMaxWait)
	case try > RetryTries || waited+wait > RetryBudget:
		return fail("gave up after %d tries and %s of waiting: try again later", try, waited.Round(time.Millisecond))
	case ok && time.Until(dl) < wait:
		return fail("it asks to wait %s, longer than this call may still take (%s)", wait, max(0, time.Until(dl)).Round(time.Millisecond))
	}
	return nil
}

// parseRetryAfter reads a Retry-After header: seconds, or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

// send makes one call and reads its answer whole.
func (c *Client) send(ctx context.Context, method, path, contentType string, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, nil, bot.Errorf(bot.EInvalid, "gateway URL %q: %v", c.BaseURL, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	switch {
	case c.Person != nil:
		h, err := c.Person(ctx, tokens.Call{Method: method, URL: c.BaseURL + path, Body: body})
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Authorization", h)
	case c.Token != "":
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, bot.Errorf(bot.EUnavailable, "cannot reach the gateway at %s: %v", c.BaseURL, unwrapURLError(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, bot.Errorf(bot.EUnavailable, "reading the gateway's answer: %v", err)
	}
	return resp, b, nil
}

// answer is a call's result from its response: the error it carries, or
// its body decoded into out.
func answer(resp *http.Response, b []byte, out any) error {
	if resp.StatusCode >= 400 {
		var e ErrorBody
		if json.Unmarshal(b, &e) == nil && e.Code != "" {
			return &bot.Error{Code: e.Code, Message: e.Error}
		}
		return bot.Errorf(bot.EUnavailable, "gateway answered %s", resp.Status)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return bot.Errorf(bot.EInternal, "the gateway's answer is not the JSON expected: %v", err)
		}
	}
	return nil
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// Submit asks for approval.
func (c *Client) Submit(ctx context.Context, n bot.NewRequest) (*bot.Request, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	var r bot.Request
	path := "/v1/requests"
	if c.WithdrawOnDisconnect {
		path += "?withdraw_on_disconnect=true"
	}
	if err := c.do(ctx, http.MethodPost, path, "application/json", body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Get returns a request.
func (c *Client) Get(ctx context.Context, id string) (*bot.Request, error) {
	var r bot.Request
	if err := c.do(ctx, http.MethodGet, "/v1/requests/"+url.PathEscape(id), "", nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Wait long-polls a request for up to d (the server caps it at MaxWait).
func (c *Client) Wait(ctx context.Context, id string, d time.Duration) (*bot.Request, error) {
	var r bot.Request
	path := fmt.Sprintf("/v1/requests/%s?wait=%s", url.PathEscape(id), d.Round(time.Millisecond))
	if c.WithdrawOnDisconnect {
		path += "&withdraw_on_disconnect=true"
	}
	if n, ok := c.seen.get(id); ok {
		path += "&seen=" + strconv.Itoa(n)
	}
	h, err := c.doHeader(ctx, http.MethodGet, path, "", nil, &r)
	if err != nil {
		return nil, err
	}
	c.seen.set(id, &r, h)
	return &r, nil
}

// List returns requests with status f.Status (all when empty).
func (c *Client) List(ctx context.Context, f bot.Filter) ([]*bot.Request, error) {
	var out struct {
		Requests []*bot.Request `json:"requests"`
	}
	path := "/v1/requests"
	if f.Status != "" {
		path += "?status=" + url.QueryEscape(string(f.Status))
	}
	if err := c.do(ctx, http.MethodGet, path, "", nil, &out); err != nil {
		return nil, err
	}
	return out.Requests, nil
}

// PostEvent submits a signed Nostr event (a reaction).
func (c *Client) PostEvent(ctx context.Context, raw []byte) (VoteResponse, error) {
	var out VoteResponse
	err := c.do(ctx, http.MethodPost, "/v1/nostr/events", "application/json", raw, &out)
	return out, err
}

// Record logs an action that ran without asking; the gateway refuses
// (EConflict) one it classifies as dangerous.
func (c *Client) Record(ctx context.Context, n bot.NewRequest) (bot.Assessment, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return bot.Assessment{}, err
	}
	var a bot.Assessment
	err = c.do(ctx, http.MethodPost, "/v1/actions", "application/json", body, &a)
	return a, err
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
