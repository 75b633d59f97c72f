package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/signoff/signoff/bot/tokens"
)

// CreateToken asks the gateway for a token (admin, or the first token
// from loopback).
func (c *Client) CreateToken(ctx context.Context, n NewToken) (CreatedToken, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return CreatedToken{}, err
	}
	var out CreatedToken
	err = c.do(ctx, http.MethodPost, "/v1/tokens", "application/json", body, &out)
	return out, err
}

// Tokens lists the gateway's tokens (never the tokens themselves).
func (c *Client) Tokens(ctx context.Context) ([]*tokens.Token, error) {
	var out struct {
		Tokens []*tokens.Token `json:"tokens"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/tokens", "", nil, &out)
	return out.Tokens, err
}

// RevokeToken revokes the token called name.
func (c *Client) RevokeToken(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/tokens/"+url.PathEscape(name), "", nil, nil)
}

// SelfToken returns the record of the token the client sends (its scopes,
// personas and declared network doors).
func (c *Client) SelfToken(ctx context.Context) (*tokens.Token, error) {
	var t tokens.Token
	if err := c.do(ctx, http.MethodGet, "/v1/tokens/self", "", nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}
