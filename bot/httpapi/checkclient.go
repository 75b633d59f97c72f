package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/signoff/signoff/bot/grants"
	"github.com/signoff/signoff/bot/permissions"
)

// Check asks the gateway whether a call may run (POST /v1/check).
func (c *Client) Check(ctx context.Context, ch permissions.Check) (*permissions.Result, error) {
	body, err := json.Marshal(ch)
	if err != nil {
		return nil, err
	}
	var res permissions.Result
	path := "/v1/check"
	if c.WithdrawOnDisconnect && ch.Wait {
		path += "?withdraw_on_disconnect=true"
	}
	if err := c.do(ctx, http.MethodPost, path, "application/json", body, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Grants lists the live grants (of persona, when not empty).
func (c *Client) Grants(ctx context.Context, persona string) ([]grants.Grant, error) {
	path := "/v1/grants"
	if persona != "" {
		path += "?persona=" + url.QueryEscape(persona)
	}
	var out GrantList
	if err := c.do(ctx, http.MethodGet, path, "", nil, &out); err != nil {
		return nil, err
	}
	return out.Grants, nil
}

// RevokeGrant ends a grant at once on every replica.
func (c *Client) RevokeGrant(ctx context.Context, id string) (grants.Grant, error) {
	var g grants.Grant
	err := c.do(ctx, http.MethodDelete, "/v1/grants/"+url.PathEscape(id), "", nil, &g)
	return g, err
}
