package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/signoff/signoff/bot/netpolicy"
)

// FileNetRequest asks for network access (POST /v1/network/requests).
func (c *Client) FileNetRequest(ctx context.Context, b NetRequestBody) (*netpolicy.Filed, error) {
	body, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	var f netpolicy.Filed
	if err := c.do(ctx, http.MethodPost, "/v1/network/requests", "application/json", body, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// FileDraft records a refused destination (POST /v1/network/drafts); nil
// when the policy allows it.
func (c *Client) FileDraft(ctx context.Context, persona string, d netpolicy.Dest) (*netpolicy.Draft, error) {
	body, err := json.Marshal(NetRequestBody{Persona: persona, Host: d.Host, Port: d.Port, Program: d.Program, Method: d.Method, Path: d.Path, Extension: d.Extension})
	if err != nil {
		return nil, err
	}
	var a DraftAnswer
	if err := c.do(ctx, http.MethodPost, "/v1/network/drafts", "application/json", body, &a); err != nil {
		return nil, err
	}
	return a.Draft, nil
}

// NetRequests lists network requests, and the drafts with all.
func (c *Client) NetRequests(ctx context.Context, all bool) (*netpolicy.Listing, error) {
	var l netpolicy.Listing
	path := "/v1/network/requests"
	if all {
		path += "?all=true"
	}
	if err := c.do(ctx, http.MethodGet, path, "", nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// NetApprove sends a person's signed approval (and an edited policy).
func (c *Client) NetApprove(ctx context.Context, id string, b NetAnswerBody) (*netpolicy.Answer, error) {
	return c.netAnswer(ctx, id, "approve", b)
}

// NetDeny sends a person's signed denial with its reason.
func (c *Client) NetDeny(ctx context.Context, id string, b NetAnswerBody) (*netpolicy.Answer, error) {
	return c.netAnswer(ctx, id, "deny", b)
}

func (c *Client) netAnswer(ctx context.Context, id, verb string, b NetAnswerBody) (*netpolicy.Answer, error) {
	body, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	var a netpolicy.Answer
	if err := c.do(ctx, http.MethodPost, "/v1/network/requests/"+url.PathEscape(id)+"/"+verb, "application/json", body, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// Policy returns revision n (the current one for 0).
func (c *Client) Policy(ctx context.Context, n int) (netpolicy.Revision, error) {
	var rev netpolicy.Revision
	path := "/v1/network/policy"
	if n > 0 {
		path += fmt.Sprintf("?rev=%d", n)
	}
	err := c.do(ctx, http.MethodGet, path, "", nil, &rev)
	return rev, err
}

// WaitPolicy long-polls for a revision newer than after.
func (c *Client) WaitPolicy(ctx context.Context, after int, d time.Duration) (netpolicy.Revision, error) {
	var rev netpolicy.Revision
	path := fmt.Sprintf("/v1/network/policy?after=%d&wait=%s", after, d.Round(time.Millisecond))
	err := c.do(ctx, http.MethodGet, path, "", nil, &rev)
	return rev, err
}
