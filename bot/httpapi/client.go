package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/signoff/signoff/bot"
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
}

var _ bot.Service = (*Client)(nil)

// NewClient returns a client for the gateway at base.
func NewClient(base string) *Client {
	return &Client{BaseURL: strings.TrimRight(base, "/"), HTTP: &http.Client{}}
}

func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return bot.Errorf(bot.EInvalid, "gateway URL %q: %v", c.BaseURL, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return bot.Errorf(bot.EUnavailable, "cannot reach the gateway at %s: %v", c.BaseURL, unwrapURLError(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return bot.Errorf(bot.EUnavailable, "reading the gateway's answer: %v", err)
	}
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
	if err := c.do(ctx, http.MethodGet, path, "", nil, &r); err != nil {
		return nil, err
	}
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
