package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/permissions"
	"github.com/signoff/signoff/bot/tokens"
)

// tokenRoutes are the admin endpoints for tokens. Creating the first
// token needs none (from loopback, while the store holds no token).
func (s *Server) tokenRoutes(mux *Mux) {
	if s.Auth == nil || s.Auth.Tokens == nil {
		return
	}
	first := Needs(tokens.Admin)
	first.first = true
	mux.HandleFunc("POST /v1/tokens", first, s.createToken)
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
	by := callerName(r.Context())
	if TokenFrom(r.Context()) == nil && !slices.Contains(spec.Scopes, tokens.Admin) {
		// Once a token exists the API is closed: without an admin token
		// nobody could manage tokens through it any more.
		shut, err := s.Auth.Closed(r.Context())
		if err == nil && !shut {
			err = bot.Errorf(bot.EInvalid, "the first token must carry the admin scope, so tokens can still be managed once the API is closed (e.g. --name me --scopes admin)")
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
	}
	plain, t, err := tokens.New(s.Auth.Secret, spec, s.now())
	switch {
	case err != nil:
	case TokenFrom(r.Context()) == nil:
		// Let in without a token, as no token existed when it was
		// checked: made only if that still holds (another replica, or
		// a call beside this one, may have made the first meanwhile).
		err = s.Auth.Tokens.CreateFirstToken(r.Context(), t)
	default:
		err = s.Auth.Tokens.CreateToken(r.Context(), t)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.Auth.markClosed()
	s.auditToken(r.Context(), "created", t, by)
	out := CreatedToken{Name: t.Name, Token: plain, Record: t}
	if s.Checker != nil && s.Checker.Personas != nil {
		out.Warnings = PersonaWarnings(r.Context(), s.Checker.Personas, t.Personas)
	}
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	ts, err := s.Auth.Tokens.Tokens(r.Context())
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
	t, err := s.Auth.Tokens.RevokeToken(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.auditToken(r.Context(), "revoked", t, callerName(r.Context()))
	writeJSON(w, http.StatusOK, map[string]string{"revoked": t.Name})
}

// TokenChange is the audit record of a token created or revoked.
type TokenChange struct {
	Action string        `json:"action"`
	Token  *tokens.Token `json:"token"`
	By     string        `json:"by"`
}

func (s *Server) auditToken(ctx context.Context, action string, t *tokens.Token, by string) {
	s.log().Info("token "+action, "name", t.Name, "scopes", tokens.Join(t.Scopes), "by", by)
	if s.Auth.Audit == nil {
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if err := s.Auth.Audit.Append(actx, bot.AuditEntry{Type: "token", Data: TokenChange{Action: action, Token: t, By: by}}); err != nil {
		s.log().Error("cannot audit a token change", "err", err)
	}
}

// callerName is the call's token name, or what let it in without one.
func callerName(ctx context.Context) string {
	if t := TokenFrom(ctx); t != nil {
		return t.Name
	}
	return "loopback, before any token existed"
}
