package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/signoff/signoff/bot"
)

// Withdrawer is the gateway's withdraw capability (bot.Gateway has it).
type Withdrawer interface {
	Withdraw(ctx context.Context, id, reason string) (*bot.Request, error)
	// WaitHeld is Wait by the requester: its going away withdraws.
	WaitHeld(ctx context.Context, id string, d time.Duration) (*bot.Request, error)
	// ExpectHeld: the requester filed id and will WaitHeld it.
	ExpectHeld(id string)
}

// held reports whether the caller is the requester's own client, which
// asks that its going away withdraw the request.
func held(r *http.Request) bool { return r.URL.Query().Get("withdraw_on_disconnect") == "true" }

// expectHeld arms withdraw-on-disconnect for a request just filed.
func (s *Server) expectHeld(r *http.Request, req *bot.Request) {
	if wd, ok := s.Gateway.(Withdrawer); ok && held(r) && req != nil && !req.Status.Final() {
		wd.ExpectHeld(req.ID)
	}
}

// WithdrawBody is the optional body of POST /v1/requests/{id}/withdraw.
type WithdrawBody struct {
	Reason string `json:"reason,omitempty"`
}

// withdraw takes back a pending request (POST /v1/requests/{id}/withdraw).
func (s *Server) withdraw(w http.ResponseWriter, r *http.Request) {
	wd, ok := s.Gateway.(Withdrawer)
	if !ok {
		s.fail(w, r, bot.Errorf(bot.EUnavailable, "this gateway cannot withdraw requests"))
		return
	}
	var b WithdrawBody
	if r.ContentLength != 0 {
		if err := decode(w, r, &b); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	// A token bound to some personas withdraws only their requests.
	cur, err := s.Gateway.Get(r.Context(), r.PathValue("id"))
	if err == nil {
		err = AllowPersona(r.Context(), cur.Persona)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	req, err := wd.Withdraw(r.Context(), cur.ID, b.Reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, req)
}

// wait long-polls; with ?withdraw_on_disconnect=true (what the requester's
// own client sends) a connection that goes away withdraws the request.
func (s *Server) wait(r *http.Request, id string, d time.Duration, seen int) (*bot.Request, error) {
	if seen >= 0 {
		// What park's WaitFunc does with seen: a change since is
		// answered at once.
		if req, err := s.Gateway.Get(r.Context(), id); err != nil || req.Status != bot.Pending || req.Seen != seen {
			return req, err
		}
	}
	if wd, ok := s.Gateway.(Withdrawer); ok && held(r) {
		return wd.WaitHeld(r.Context(), id, d)
	}
	return s.Gateway.Wait(r.Context(), id, d)
}

// Withdraw takes back a pending request.
func (c *Client) Withdraw(ctx context.Context, id, reason string) (*bot.Request, error) {
	var body []byte
	if reason != "" {
		body = mustJSON(WithdrawBody{Reason: reason})
	}
	var r bot.Request
	if err := c.do(ctx, http.MethodPost, "/v1/requests/"+url.PathEscape(id)+"/withdraw", "application/json", body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
