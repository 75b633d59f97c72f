package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/permissions"
	"github.com/signoff/signoff/bot/tokens"
)

// tokenRoutes are the admin endpoints for tokens: an admin token, or a
// persona owner's signed call (NIP-98), and nothing else, may make one.
func (s *Server) tokenRoutes(mux *Mux) {
	if s.Auth == nil || s.Auth.Tokens == nil {
		return
	}
	mux.HandleFunc("POST /v1/tokens", Needs(tokens.Admin), s.createToken)
	mux.HandleFunc("GET /v1/tokens", Needs(tokens.Admin), s.listTokens)
	mux.HandleFunc("DELETE /v1/tokens/{name}", Needs(tokens.Admin), s.revokeToken)
	// Any valid token may read its own record: how the egress proxy can
	// learn the doors an extension's token declared (Token.Doors), asking
	// on every connection so a revocation holds at once.
	mux.HandleFunc("GET /v1/tokens/self", Needs(tokens.All...), s.selfToken)
}

func (s *Server) selfToken(w http.ResponseWriter, r *http.Request) {
	t := TokenFrom(r.Context())
	if t == nil {
		s.fail(w, r, bot.Errorf(bot.EInvalid, "no token was sent, so there is none to describe"))
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// NewToken is the body of POST /v1/tokens.
type NewToken struct {
	Name      string   `json:"name"`
	Scopes    []string `json:"scopes"`
	Personas  []string `json:"personas,omitempty"`
	Network   []string `json:"network,omitempty"`
	Extension string   `json:"extension,omitempty"`
	Expires   string   `json:"expires,omitempty"` // 30d, 12h; empty: never
}

// CreatedToken answers POST /v1/tokens: the token, shown this once.
type CreatedToken struct {
	Name   string        `json:"name"`
	Token  string        `json:"token"`
	Record *tokens.Token `json:"record"`
	// Warnings are for the person who made it: a persona it is bound to
	// that no file defines now (a typo, or one still to be added).
	Warnings []string `json:"warnings,omitempty"`
}

// PersonaWarnings says which of names no persona file defines now: the
// token is made all the same (the persona may be added later), but a
// typo should not pass unseen.
func PersonaWarnings(ctx context.Context, ps permissions.PersonaStore, names []string) []string {
	var out []string
	for _, n := range names {
		if _, err := ps.Persona(ctx, n); bot.ErrorCode(err) == bot.ENotFound {
			out = append(out, fmt.Sprintf("no persona %q is loaded: the token works for it only once a persona file of that name is (check the spelling)", n))
		}
	}
	return out
}

// Spec checks n and turns it into a tokens.Spec.
func (n NewToken) Spec() (tokens.Spec, error) {
	scopes, err := tokens.ParseScopes(strings.Join(n.Scopes, ","))
	if err != nil {
		return tokens.Spec{}, err
	}
	ttl, err := tokens.ParseTTL(n.Expires)
	if err != nil {
		return tokens.Spec{}, err
	}
	doors, err := tokens.ParseDoors(n.Network)
	if err != nil {
		return tokens.Spec{}, err
	}
	for _, p := range n.Personas {
		if p == "" {
			return tokens.Spec{}, bot.Errorf(bot.EInvalid, "an empty persona name")
		}
	}
	return tokens.Spec{Name: n.Name, Scopes: scopes, Personas: n.Personas, Network: doors, Ext: n.Extension, TTL: ttl}, nil
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var n NewToken
	if err := decode(w, r, &n); err != nil {
		s.fail(w, r, err)
		return
	}
	spec, err := n.Spec()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	plain, t, err := s.Auth.Service().Create(r.Context(), CallerFrom(r.Context()), spec)
	if bot.ErrorCode(err) == bot.EUnauthorized {
		// A caller let in without a token (loopback, none yet) asked for
		// one: refused and audited like any other unauthenticated call.
		s.refuse(w, r, nil, Needs(tokens.Admin), err)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := CreatedToken{Name: t.Name, Token: plain, Record: t}
	if s.Checker != nil && s.Checker.Personas != nil {
		out.Warnings = PersonaWarnings(r.Context(), s.Checker.Personas, t.Personas)
	}
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	ts, err := s.Auth.Service().List(r.Context(), CallerFrom(r.Context()))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if ts == nil {
		ts = []*tokens.Token{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": ts})
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	t, err := s.Auth.Service().Revoke(r.Context(), CallerFrom(r.Context()), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"revoked": t.Name})
}

// callerName is the call's token name, the person who signed it, or what
// let it in without either.
func callerName(ctx context.Context) string {
	if c := CallerFrom(ctx); c.Token != nil || c.Person != nil {
		return c.Name()
	}
	return "loopback, before any token existed"
}
