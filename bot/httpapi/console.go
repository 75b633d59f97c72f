package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/console"
	"github.com/signoff/signoff/bot/netpolicy"
	"github.com/signoff/signoff/bot/tokens"
	"github.com/signoff/signoff/signing"
)

// Console is what the console's routes need (DESIGN §1.10).
type Console struct {
	// Feed follows request changes for the live feed.
	Feed *console.Feed
	// GatewayKey is the gateway's public key (hex), told to the page; the
	// page trusts the pin its link carries, not this.
	GatewayKey string
	// Audit reads the audit log; nil: no audit view.
	Audit *console.AuditFile
	// PolicyFile is the network policy file "approve and save" edits
	// (SIGNOFF_NET_POLICY); "": saving is refused.
	PolicyFile string
	// Electorate, when set, fills in who may still answer a pending
	// request (the store's List leaves it out; Get fills it in).
	Electorate func(ctx context.Context, r *bot.Request)
	// Heartbeat is how often an idle feed sends a comment line (default
	// 15s), so proxies keep it open and a dead page is noticed.
	Heartbeat time.Duration
}

// HistorySize caps the decided requests the feed's first message lists.
const HistorySize = 100

// The feed's list comes as a "snapshot" message of the FirstBatch oldest
// pending requests, then "more" messages of MoreBatch each, the last with
// the history.
const (
	FirstBatch = 40
	MoreBatch  = 250
)

// FeedSnapshot is one message of the feed's list: "snapshot" (the first,
// with the gateway's key) or "more"; Done on the last.
type FeedSnapshot struct {
	GatewayKey string         `json:"gateway_pubkey,omitempty"`
	Pending    []*bot.Request `json:"pending"`
	History    []*bot.Request `json:"history"`
	Total      int            `json:"total_pending"`
	Done       bool           `json:"done"`
}

func nonNil(rs []*bot.Request) []*bot.Request {
	if rs == nil {
		return []*bot.Request{}
	}
	return rs
}

// consoleRoutes registers the console: its page (public: it shows
// nothing without a token) and the reads it needs that the API lacked.
// Votes go to POST /v1/nostr/events, signed by the person's key: no
// console route decides anything.
func (s *Server) consoleRoutes(mux *Mux) {
	if s.Console == nil {
		return
	}
	mux.Handle("GET /console/", Public, console.Files())
	mux.HandleFunc("GET /console", Public, func(w http.ResponseWriter, r *http.Request) {
		console.Headers(w.Header())
		http.Redirect(w, r, console.Prefix, http.StatusMovedPermanently)
	})
	if s.Console.Feed != nil {
		mux.HandleFunc("GET /v1/console/feed", Needs(tokens.ReadRequests), s.consoleFeed)
	}
	if s.Console.Audit != nil {
		mux.HandleFunc("GET /v1/console/audit", Needs(tokens.ReadRequests), s.consoleAudit)
		mux.HandleFunc("GET /v1/console/audit/{id}", Needs(tokens.ReadRequests), s.consoleHistory)
	}
	if s.Network != nil {
		mux.HandleFunc("GET /v1/console/network/{id}/preview", Needs(tokens.Admin), s.consoleNetPreview)
		mux.HandleFunc("POST /v1/console/network/{id}/approve", Needs(tokens.Admin), s.consoleNetApprove)
		mux.HandleFunc("GET /v1/console/network/revisions", Needs(tokens.Admin), s.consoleRevisions)
	}
}

// consoleFeed is the live feed, as server-sent events: "snapshot" and
// "more" (FeedSnapshot: the list, in parts), then "request" (a request as it now is) at each change,
// "resync" when changes may have been missed, and a comment line as a
// heartbeat. A page reads it with fetch() (it sends the bearer header,
// which EventSource cannot).
func (s *Server) consoleFeed(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sub, err := s.Console.Feed.Subscribe(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer s.Console.Feed.Unsubscribe(sub)
	// Subscribed first, then the list read: a change between them is
	// told twice rather than missed.
	all, err := s.Gateway.List(ctx, bot.Filter{})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var pending, history []*bot.Request
	for _, q := range onlyAllowed(ctx, all) {
		if q.Status == bot.Pending {
			pending = append(pending, q)
		} else {
			history = append(history, q)
		}
	}
	slices.SortFunc(pending, func(a, b *bot.Request) int { return a.CreatedAt.Compare(b.CreatedAt) })
	slices.SortFunc(history, func(a, b *bot.Request) int { return decidedAt(b).Compare(decidedAt(a)) })
	history = history[:min(len(history), HistorySize)]

	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // the server's write timeout is for answers, not a stream
	h := w.Header()
	console.Headers(h)
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return err
		}
		return rc.Flush()
	}
	// The first screenful first, so the page paints it at once; the rest
	// of the list follows in batches before any change is told.
	first := pending[:min(len(pending), FirstBatch)]
	s.electorates(ctx, first)
	snap := FeedSnapshot{GatewayKey: s.Console.GatewayKey, Pending: nonNil(first), History: []*bot.Request{}, Total: len(pending), Done: len(pending) <= FirstBatch && len(history) == 0}
	if send("snapshot", snap) != nil {
		return
	}
	rest := pending[len(first):]
	for !snap.Done {
		batch := rest[:min(len(rest), MoreBatch)]
		rest = rest[len(batch):]
		s.electorates(ctx, batch)
		snap = FeedSnapshot{Pending: nonNil(batch), History: []*bot.Request{}, Total: len(pending), Done: len(rest) == 0}
		if snap.Done {
			snap.History = nonNil(history)
		}
		if send("more", snap) != nil {
			return
		}
	}
	every := s.Console.Heartbeat
	if every <= 0 {
		every = 15 * time.Second
	}
	beat := time.NewTicker(every)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case u, ok := <-sub.C:
			var err error
			switch {
			case !ok: // too far behind, or the gateway is stopping
				_ = send("resync", map[string]string{"why": "the feed fell behind"})
				return
			case u.Resync:
				err = send("resync", map[string]string{"why": "changes may have been missed"})
			case AllowPersona(ctx, u.Request.Persona) == nil:
				err = send("request", u.Request)
			}
			if err != nil {
				return
			}
		}
	}
}

// electorates fills in who may still answer each of rs, a few at a time.
func (s *Server) electorates(ctx context.Context, rs []*bot.Request) {
	if s.Console.Electorate == nil {
		return
	}
	const workers = 8
	var wg sync.WaitGroup
	next := make(chan *bot.Request)
	for range min(workers, len(rs)) {
		wg.Go(func() {
			for r := range next {
				s.Console.Electorate(ctx, r)
			}
		})
	}
	for _, r := range rs {
		next <- r
	}
	close(next)
	wg.Wait()
}

func decidedAt(r *bot.Request) time.Time {
	if r.DecidedAt != nil {
		return *r.DecidedAt
	}
	return r.CreatedAt
}

func (s *Server) consoleAudit(w http.ResponseWriter, r *http.Request) {
	st, err := s.Console.Audit.State(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// RequestHistory is a request's whole story: the request as it is and
// every audit record of it.
type RequestHistory struct {
	Request *bot.Request     `json:"request"`
	Records []signing.Record `json:"records"`
}

func (s *Server) consoleHistory(w http.ResponseWriter, r *http.Request) {
	req, err := s.Gateway.Get(r.Context(), r.PathValue("id"))
	if err == nil {
		err = AllowPersona(r.Context(), req.Persona)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	recs, err := s.Console.Audit.History(r.Context(), req.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, RequestHistory{Request: req, Records: recs})
}

// NetPreview is what approving a network request would do, as `signoff
// net approve --dry-run --save` shows it: the next revision's diff and,
// for the policy file, its line diff and check. Nothing is changed.
type NetPreview struct {
	Request  netpolicy.Item `json:"request"`
	Revision int            `json:"revision"`
	Next     int            `json:"next_revision"`
	Change   string         `json:"change"`
	Diff     []string       `json:"diff"`
	// EveryMethod is set when no method or path was asked.
	EveryMethod bool     `json:"every_method,omitempty"`
	File        string   `json:"file,omitempty"`
	FileDiff    []string `json:"file_diff"`
	// Check is "ok" or why the edited file fails (then it cannot be saved).
	Check string `json:"check"`
	// CanSave: approve-and-save would write File.
	CanSave bool `json:"can_save"`
}

func (s *Server) consoleNetPreview(w http.ResponseWriter, r *http.Request) {
	p, _, err := s.netPreview(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// netPreview works out NetPreview for request id, and the file as it
// would be written (nil when it cannot be).
func (s *Server) netPreview(ctx context.Context, id string) (*NetPreview, []byte, error) {
	l, err := s.Network.List(ctx, false)
	if err != nil {
		return nil, nil, err
	}
	i := slices.IndexFunc(l.Requests, func(it netpolicy.Item) bool { return it.ID == id })
	if i < 0 {
		return nil, nil, bot.Errorf(bot.ENotFound, "no network request %q", id)
	}
	it := l.Requests[i]
	if err := AllowPersona(ctx, it.Persona); err != nil {
		return nil, nil, err
	}
	cur, err := s.Network.Policy(ctx, 0)
	if err != nil {
		return nil, nil, err
	}
	next, ch := netpolicy.Derive(cur.Policy, it.Dest)
	p := &NetPreview{Request: it, Revision: cur.N, Next: cur.N, Change: string(ch.Kind), Diff: []string{}, FileDiff: []string{}}
	if ch.Kind != netpolicy.AlreadyAllowed {
		p.Next = cur.N + 1
		p.Diff = netpolicy.Diff(cur.Policy, next)
		p.EveryMethod = it.Dest.Method == ""
	}
	if s.Console.PolicyFile == "" {
		p.Check = "no policy file is configured (SIGNOFF_NET_POLICY): approve without saving"
		return p, nil, nil
	}
	p.File = s.Console.PolicyFile
	data, err := os.ReadFile(p.File)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		p.Check = "cannot read the policy file: " + err.Error()
		return p, nil, nil
	}
	out, _, err := netpolicy.EditFile(p.File, data, it.Dest, nil)
	if err != nil {
		p.Check = "check of the edited file failed: " + err.Error()
		return p, nil, nil
	}
	p.FileDiff = netpolicy.LineDiff(string(data), string(out))
	p.Check = "ok (valid, lets the request through, comments kept)"
	p.CanSave = true
	return p, out, nil
}

// ConsoleNetApprove is POST /v1/console/network/{id}/approve: the
// person's signed reaction to the request's event and whether to save
// the rule into the policy file once the approval decides the request.
type ConsoleNetApprove struct {
	Event json.RawMessage `json:"event"`
	Save  bool            `json:"save"`
}

// ConsoleNetAnswer is its answer: the network answer, and the file
// written (when saved).
type ConsoleNetAnswer struct {
	*netpolicy.Answer
	Wrote string `json:"wrote,omitempty"`
	Saved string `json:"saved"`
}

// consoleNetApprove is POST /v1/network/requests/{id}/approve with "save"
// done here, where the policy file is: checked before the vote is cast,
// written only once the vote decided the request.
func (s *Server) consoleNetApprove(w http.ResponseWriter, r *http.Request) {
	var b ConsoleNetApprove
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if len(b.Event) == 0 {
		s.fail(w, r, bot.Errorf(bot.EInvalid, "event is required: the person's signed reaction to the request's event"))
		return
	}
	ballot, err := s.ballot(b.Event)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var file []byte
	if b.Save {
		p, out, err := s.netPreview(r.Context(), r.PathValue("id"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if out == nil {
			s.fail(w, r, bot.Errorf(bot.EInvalid, "nothing was approved or written: %s", p.Check))
			return
		}
		file = out
	}
	ans, err := s.Network.Approve(r.Context(), r.PathValue("id"), ballot, "", nil)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := ConsoleNetAnswer{Answer: ans, Saved: "not asked"}
	switch {
	case !b.Save:
	case ans.Applied == nil:
		out.Saved = "not decided yet: " + s.Console.PolicyFile + " is left as it is"
	default:
		if err := netpolicy.WriteFileAtomic(s.Console.PolicyFile, file); err != nil {
			s.log().Error("console: write the policy file", "file", s.Console.PolicyFile, "err", err)
			out.Saved = "approved, but writing " + s.Console.PolicyFile + " failed: " + err.Error()
		} else {
			out.Wrote, out.Saved = s.Console.PolicyFile, "wrote "+s.Console.PolicyFile
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// consoleRevisions lists the policy revisions, newest first, each with
// its diff (at most 50).
func (s *Server) consoleRevisions(w http.ResponseWriter, r *http.Request) {
	cur, err := s.Network.Policy(r.Context(), 0)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	revs := []netpolicy.Revision{cur}
	for n := cur.N - 1; n >= 1 && len(revs) < 50; n-- {
		rev, err := s.Network.Policy(r.Context(), n)
		if err != nil {
			break
		}
		revs = append(revs, rev)
	}
	writeJSON(w, http.StatusOK, map[string]any{"revisions": revs})
}
