package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/netpolicy"
	"github.com/signoff/signoff/bot/tokens"
	"github.com/signoff/signoff/signing"
)

// Network is what the network routes need (a *netpolicy.Service).
type Network interface {
	FileRequest(ctx context.Context, persona string, d netpolicy.Dest, reason string) (*netpolicy.Filed, error)
	FileDraft(ctx context.Context, persona string, d netpolicy.Dest) (*netpolicy.Draft, error)
	List(ctx context.Context, all bool) (*netpolicy.Listing, error)
	Approve(ctx context.Context, id string, b *bot.Ballot, copyName string, copy []byte) (*netpolicy.Answer, error)
	Deny(ctx context.Context, id string, b *bot.Ballot, reason string) (*netpolicy.Answer, error)
	Policy(ctx context.Context, n int) (netpolicy.Revision, error)
	WaitPolicy(ctx context.Context, after int, d time.Duration) (netpolicy.Revision, error)
}

// NetRequestBody is POST /v1/network/requests and /v1/network/drafts.
// host and port are top-level so a token's declared doors are checked.
type NetRequestBody struct {
	Persona string `json:"persona"`
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Program string `json:"program,omitempty"`
	Method  string `json:"method,omitempty"`
	Path    string `json:"path,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Extension: the extension whose token the proxy's client carried.
	Extension string `json:"extension,omitempty"`
}

func (b NetRequestBody) dest() netpolicy.Dest {
	return netpolicy.Dest{Host: b.Host, Port: b.Port, Program: b.Program, Method: b.Method, Path: b.Path, Extension: b.Extension}
}

// NetAnswerBody is POST /v1/network/requests/{id}/approve and /deny: the
// person's signed reaction to the request's event, and for approve an
// optional edited policy (--policy-from), for deny the reason.
type NetAnswerBody struct {
	Event      json.RawMessage `json:"event,omitempty"`
	Policy     *string         `json:"policy,omitempty"`
	PolicyName string          `json:"policy_name,omitempty"`
	Reason     string          `json:"reason,omitempty"`
}

// DraftAnswer is POST /v1/network/drafts' answer: the draft, or nothing
// drafted because the policy allows it.
type DraftAnswer struct {
	Draft   *netpolicy.Draft `json:"draft,omitempty"`
	Allowed bool             `json:"allowed"`
}

// networkRoutes registers the network routes (docs/design.md#network-access-requests-and-policy-revisions).
func (s *Server) networkRoutes(mux *Mux) {
	if s.Network == nil {
		return
	}
	mux.HandleFunc("POST /v1/network/requests", Needs(tokens.NetRequest), s.netRequest)
	mux.HandleFunc("POST /v1/network/drafts", Needs(tokens.NetRequest), s.netDraft)
	mux.HandleFunc("GET /v1/network/requests", Needs(tokens.NetRequest, tokens.Admin), s.netList)
	mux.HandleFunc("POST /v1/network/requests/{id}/approve", Needs(tokens.Admin), s.netApprove)
	mux.HandleFunc("POST /v1/network/requests/{id}/deny", Needs(tokens.Admin), s.netDeny)
	mux.HandleFunc("GET /v1/network/policy", Needs(tokens.NetRequest, tokens.Admin), s.netPolicy)
}

func (s *Server) netRequest(w http.ResponseWriter, r *http.Request) {
	var b NetRequestBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	f, err := s.Network.FileRequest(r.Context(), b.Persona, b.dest(), b.Reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusCreated
	if f.Request == nil || f.AllowedBy != nil {
		status = http.StatusOK
	}
	writeJSON(w, status, f)
}

func (s *Server) netDraft(w http.ResponseWriter, r *http.Request) {
	var b NetRequestBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	d, err := s.Network.FileDraft(r.Context(), b.Persona, b.dest())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if d == nil {
		writeJSON(w, http.StatusOK, DraftAnswer{Allowed: true})
		return
	}
	writeJSON(w, http.StatusCreated, DraftAnswer{Draft: d})
}

func (s *Server) netList(w http.ResponseWriter, r *http.Request) {
	all, err := boolQuery(r, "all")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	l, err := s.Network.List(r.Context(), all)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if t := TokenFrom(r.Context()); t != nil && len(t.Personas) > 0 {
		l.Requests = slices.DeleteFunc(l.Requests, func(it netpolicy.Item) bool { return !t.AllowsPersona(it.Persona) })
		l.Drafts = slices.DeleteFunc(l.Drafts, func(d netpolicy.Draft) bool { return !t.AllowsPersona(d.Persona) })
	}
	writeJSON(w, http.StatusOK, l)
}

func boolQuery(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, bot.Errorf(bot.EInvalid, "%s=%q is not true or false", name, v)
	}
	return b, nil
}

// ballot verifies the signed reaction before anything in it is believed.
func (s *Server) ballot(raw json.RawMessage) (*bot.Ballot, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	re, err := signing.ParseReaction(raw, s.now())
	if err != nil {
		return nil, err
	}
	b := re.Ballot(raw)
	return &b, nil
}

func (s *Server) netApprove(w http.ResponseWriter, r *http.Request) {
	var b NetAnswerBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	ballot, err := s.ballot(b.Event)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var copy []byte
	name := b.PolicyName
	if b.Policy != nil {
		copy = []byte(*b.Policy)
		if name == "" {
			name = "the edited policy"
		}
	}
	ans, err := s.Network.Approve(r.Context(), r.PathValue("id"), ballot, name, copy)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

func (s *Server) netDeny(w http.ResponseWriter, r *http.Request) {
	var b NetAnswerBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	ballot, err := s.ballot(b.Event)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ans, err := s.Network.Deny(r.Context(), r.PathValue("id"), ballot, b.Reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

// netPolicy answers ?rev=N with revision N, else the current one; with
// ?after=N&wait=30s it long-polls until a revision newer than N is
// published (how the proxy applies a revision the moment it exists).
func (s *Server) netPolicy(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, err := intQuery(q.Get("rev"), "rev", 1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var rev netpolicy.Revision
	if q.Has("after") {
		after, err := intQuery(q.Get("after"), "after", -1)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		d, perr := time.ParseDuration(q.Get("wait"))
		if perr != nil || d < 0 {
			s.fail(w, r, bot.Errorf(bot.EInvalid, "wait %q is not a duration such as 30s", q.Get("wait")))
			return
		}
		rev, err = s.Network.WaitPolicy(r.Context(), after, min(d, MaxWait))
	} else {
		rev, err = s.Network.Policy(r.Context(), n)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rev)
}

func intQuery(v, name string, least int) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least || n > 1<<30 {
		return 0, bot.Errorf(bot.EInvalid, "%s=%q is not a revision number", name, v)
	}
	return n, nil
}
