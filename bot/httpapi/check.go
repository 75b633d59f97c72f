package httpapi

import (
	"context"
	"net/http"
	"regexp"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/grants"
	"github.com/signoff/signoff/bot/permissions"
	"github.com/signoff/signoff/bot/tokens"
)

// checkRoutes are POST /v1/check (scope check) and the grant admin
// endpoints (scope admin). Without a Checker they are not served.
func (s *Server) checkRoutes(mux *Mux) {
	if s.Checker == nil {
		return
	}
	mux.HandleFunc("POST /v1/check", Needs(tokens.Check), s.check)
	if s.Checker.Grants != nil {
		mux.HandleFunc("GET /v1/grants", Needs(tokens.Admin), s.listGrants)
		mux.HandleFunc("DELETE /v1/grants/{id}", Needs(tokens.Admin), s.revokeGrant)
	}
}

func (s *Server) check(w http.ResponseWriter, r *http.Request) {
	var ch permissions.Check
	if err := decode(w, r, &ch); err != nil {
		s.fail(w, r, err)
		return
	}
	var reqs permissions.Requests = s.Checker.Requests
	if wd, ok := s.Gateway.(Withdrawer); ok && held(r) && reqs != nil {
		// The requester's own client: its going away withdraws the request.
		reqs = heldRequests{Requests: reqs, wd: wd}
	}
	res, err := s.Checker.CheckWith(r.Context(), ch, reqs)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if s.OnCheck != nil {
		s.OnCheck(res.Decision)
	}
	writeJSON(w, http.StatusOK, res)
}

// heldRequests files requests whose requester waits on the connection:
// should it go away, the request is withdrawn (withdraw.go).
type heldRequests struct {
	permissions.Requests
	wd Withdrawer
}

func (h heldRequests) Submit(ctx context.Context, n bot.NewRequest) (*bot.Request, error) {
	r, err := h.Requests.Submit(ctx, n)
	if err == nil && r != nil && !r.Status.Final() {
		h.wd.ExpectHeld(r.ID)
	}
	return r, err
}

func (h heldRequests) Wait(ctx context.Context, id string, d time.Duration) (*bot.Request, error) {
	return h.wd.WaitHeld(ctx, id, d)
}

// GrantList answers GET /v1/grants.
type GrantList struct {
	Grants []grants.Grant `json:"grants"`
}

func (s *Server) listGrants(w http.ResponseWriter, r *http.Request) {
	persona := r.URL.Query().Get("persona")
	gs, err := s.Checker.Grants.Grants(r.Context(), persona, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := []grants.Grant{}
	for _, g := range gs {
		if AllowPersona(r.Context(), g.Persona) == nil {
			out = append(out, g)
		}
	}
	writeJSON(w, http.StatusOK, GrantList{Grants: out})
}

var grantIDRE = regexp.MustCompile(`^[a-z0-9]{1,64}$`)

func (s *Server) revokeGrant(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !grantIDRE.MatchString(id) {
		s.fail(w, r, bot.Errorf(bot.EInvalid, "%q is not a grant id (see `signoff grants`)", id))
		return
	}
	if err := s.grantInScope(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	m := &grants.Maker{Store: s.Checker.Grants, Audit: s.Checker.Audit, Now: s.Now}
	g, err := m.Revoke(r.Context(), id, callerName(r.Context()))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, g)
}

// grantInScope refuses revoking a grant of a persona the token may not act for.
func (s *Server) grantInScope(ctx context.Context, id string) error {
	t := TokenFrom(ctx)
	if t == nil || len(t.Personas) == 0 {
		return nil
	}
	gs, err := s.Checker.Grants.Grants(ctx, "", s.now())
	if err != nil {
		return err
	}
	for _, g := range gs {
		if g.ID == id {
			return AllowPersona(ctx, g.Persona)
		}
	}
	return nil
}
