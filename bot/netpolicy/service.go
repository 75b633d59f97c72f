package netpolicy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/signoff/signoff/bot"
)

// Gateway is what the Service needs of the gateway (a *bot.Gateway).
type Gateway interface {
	Submit(ctx context.Context, n bot.NewRequest) (*bot.Request, error)
	SubmitDenyOnly(ctx context.Context, n bot.NewRequest, why string) (*bot.Request, error)
	Get(ctx context.Context, id string) (*bot.Request, error)
	CastVote(ctx context.Context, b bot.Ballot) (bot.VoteOutcome, error)
	Conclude(ctx context.Context, id string, s bot.Status, reason string) (bool, error)
}

// Service files network requests and drafts, and turns approvals into
// numbered revisions. Set the fields, then Run it (it applies approvals
// made by any replica or channel and wakes policy waiters); Close stops it.
type Service struct {
	Gateway Gateway
	Store   Store
	// Decisions is the gateway store's subscription to decisions alone
	// (quorum/redis's WatchFinal): every decided request id, from any
	// replica, fn("") as it is (re)made. Store.Watch also works, at the
	// cost of a look at every vote's notice.
	Decisions func(ctx context.Context, fn func(id string)) error
	Boundary  *Boundary // nil: no boundary
	Audit     bot.Auditor
	Logger    *slog.Logger
	Now       func() time.Time

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at each new revision
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// Start applies decided network requests and relays new revisions to
// waiters until ctx ends or Close is called. It returns once both
// subscriptions are up.
func (s *Service) Start(ctx context.Context) error {
	ctx, s.cancel = context.WithCancel(ctx)
	ready := make(chan struct{}, 2)
	var once1, once2 sync.Once
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		bot.KeepFollowing(ctx, s.log(), "policy watch", func(ctx context.Context) error {
			return s.Store.WatchPolicy(ctx, func(n int) {
				once1.Do(func() { ready <- struct{}{} })
				s.wake()
			})
		})
	}()
	if s.Decisions != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			bot.KeepFollowing(ctx, s.log(), "decision watch", func(ctx context.Context) error {
				return s.Decisions(ctx, func(id string) {
					if id == "" {
						once2.Do(func() { ready <- struct{}{} })
					}
					s.wg.Add(1)
					go func() {
						defer s.wg.Done()
						// Work begun is finished (Close waits for it).
						wctx := context.WithoutCancel(ctx)
						if id == "" {
							s.reconcile(wctx)
						} else {
							s.onDecided(wctx, id)
						}
					}()
				})
			})
		}()
	} else {
		ready <- struct{}{}
	}
	for range 2 {
		select {
		case <-ready:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			s.Close()
			return bot.Errorf(bot.EUnavailable, "network policy: subscriptions not ready after 10s")
		}
	}
	return nil
}

// Close stops the subscriptions and waits for work they started.
func (s *Service) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
}

func (s *Service) wake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
	}
	s.changed = make(chan struct{})
}

func (s *Service) changedCh() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// Policy returns revision n, or the current one when n is 0.
func (s *Service) Policy(ctx context.Context, n int) (Revision, error) {
	if n < 0 {
		return Revision{}, bot.Errorf(bot.EInvalid, "revision %d: revisions are numbered from 1", n)
	}
	if n == 0 {
		return s.Store.CurrentRevision(ctx)
	}
	return s.Store.Revision(ctx, n)
}

// WaitPolicy returns the current revision once it is newer than after,
// or when d has passed.
func (s *Service) WaitPolicy(ctx context.Context, after int, d time.Duration) (Revision, error) {
	ch := s.changedCh()
	rev, err := s.Store.CurrentRevision(ctx)
	if err != nil || rev.N > after || d <= 0 {
		return rev, err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
		return Revision{}, ctx.Err()
	}
	return s.Store.CurrentRevision(ctx)
}

// Seed makes the policy file the policy: revision 1 when the store has
// none, and a new revision when the file was edited since it was last
// loaded and says something else than the current revision.
func (s *Service) Seed(ctx context.Context, file string, data []byte) (Revision, error) {
	pol, ps := Parse(file, data)
	if len(ps) > 0 {
		return Revision{}, ps
	}
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	for range 10 {
		cur, err := s.Store.CurrentRevision(ctx)
		if err != nil {
			return Revision{}, err
		}
		prev, err := s.Store.SetFileHash(ctx, h)
		if err != nil {
			return Revision{}, err
		}
		diff := Diff(cur.Policy, pol)
		if cur.N > 0 && (prev == h || len(diff) == 0) {
			return cur, nil
		}
		why := "loaded from " + file
		if cur.N > 0 {
			why = file + " was edited"
		}
		rev := Revision{N: cur.N + 1, Policy: pol, Diff: diff, By: []string{"policy file"}, At: s.now().UTC(), Why: why}
		if _, _, err := s.Store.CommitRevision(ctx, rev); errors.Is(err, ErrMoved) {
			continue
		} else if err != nil {
			return Revision{}, err
		}
		s.audit(ctx, rev)
		return rev, nil
	}
	return Revision{}, bot.Errorf(bot.EUnavailable, "the policy kept changing while loading %s", file)
}

// Filed answers a network request.
type Filed struct {
	// Request is the gateway request, pending; nil when already allowed.
	Request *bot.Request `json:"request,omitempty"`
	Dest    Dest         `json:"dest"`
	// AllowedBy names the revision and entry that already allow it.
	AllowedBy *Allowed `json:"allowed_by,omitempty"`
	Message   string   `json:"message"`
}

// Allowed names what already lets a destination through.
type Allowed struct {
	Revision int    `json:"revision"`
	Entry    string `json:"entry"`
}

// FileRequest files an agent's request for d, with its reason, posted to
// the persona's channels like any other request. Nothing is filed when
// the current revision already allows d, and a pending request for the
// same destination is returned rather than filed twice.
func (s *Service) FileRequest(ctx context.Context, persona string, d Dest, reason string) (*Filed, error) {
	return s.file(ctx, persona, d, reason, "")
}

func (s *Service) file(ctx context.Context, persona string, d Dest, reason, draft string) (*Filed, error) {
	if err := d.Normalize(); err != nil {
		return nil, bot.Errorf(bot.EInvalid, "%v", err)
	}
	reason = strings.TrimSpace(reason)
	switch {
	case persona == "":
		return nil, bot.Errorf(bot.EInvalid, "persona is required")
	case reason == "":
		return nil, bot.Errorf(bot.EInvalid, "a reason is required: say why the agent needs %s", JoinHostPort(d.Host, d.Port))
	case len(reason) > bot.MaxReasonLen:
		return nil, bot.Errorf(bot.EInvalid, "reason is longer than %d bytes", bot.MaxReasonLen)
	case !utf8.ValidString(reason):
		return nil, bot.Errorf(bot.EInvalid, "reason must be UTF-8")
	}
	cur, err := s.Store.CurrentRevision(ctx)
	if err != nil {
		return nil, err
	}
	if i, ok := cur.Policy.Allows(d); ok {
		e := cur.Policy.Hosts[i].String()
		return &Filed{Dest: d, AllowedBy: &Allowed{Revision: cur.N, Entry: e},
			Message: fmt.Sprintf("already allowed by revision %d (%s): nothing to ask", cur.N, e)}, nil
	}
	outside := !s.Boundary.Allows(d.Host, d.Port)
	recs, err := s.Store.Records(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		// A deny-only request filed before the boundary was widened is not
		// the answer to a new one that may now be approved.
		if r.Persona == persona && r.Dest == d && r.Outside == outside {
			if req, err := s.Gateway.Get(ctx, r.ID); err == nil && req.Status == bot.Pending {
				return &Filed{Request: req, Dest: d, Message: "a request for this is already waiting: " + req.ID}, nil
			}
		}
	}
	n := bot.NewRequest{Persona: persona, Kind: bot.KindNetwork, Action: "open network: " + Describe(d), Reason: reason}
	var req *bot.Request
	if outside {
		req, err = s.Gateway.SubmitDenyOnly(ctx, n, s.Boundary.Outside(JoinHostPort(d.Host, d.Port)).Error())
	} else {
		req, err = s.Gateway.Submit(ctx, n)
	}
	if err != nil {
		return nil, err
	}
	rec := Record{ID: req.ID, Persona: req.Persona, Dest: d, Reason: reason, Draft: draft, CreatedAt: req.CreatedAt, Outside: outside}
	if err := s.Store.PutRecord(ctx, rec); err != nil {
		return nil, err
	}
	if draft != "" {
		if err := s.Store.LinkDraft(ctx, draft, req.ID); err != nil {
			s.log().Warn("link draft", "draft", draft, "request", req.ID, "err", err)
		}
	}
	// Decided before the record was stored (a very fast ✅): apply now.
	if cur, err := s.Gateway.Get(ctx, req.ID); err == nil {
		req = cur
		if cur.Status == bot.Approved {
			s.apply(ctx, req.ID)
		}
	}
	msg := "filed request " + req.ID + ": waiting for a person (" + Describe(d) + ")"
	if outside {
		msg = "filed request " + req.ID + ", but " + s.Boundary.Outside(JoinHostPort(d.Host, d.Port)).Error()
	}
	return &Filed{Request: req, Dest: d, Message: msg}, nil
}

// FileDraft records a destination the proxy refused. Nothing is drafted
// when the current revision allows it.
func (s *Service) FileDraft(ctx context.Context, persona string, d Dest) (*Draft, error) {
	if err := d.Normalize(); err != nil {
		return nil, bot.Errorf(bot.EInvalid, "%v", err)
	}
	if persona == "" {
		return nil, bot.Errorf(bot.EInvalid, "persona is required")
	}
	cur, err := s.Store.CurrentRevision(ctx)
	if err != nil {
		return nil, err
	}
	if d.Method == "" {
		// A narrowed door is reached by inspected requests, each drafted
		// with its method and path when refused.
		if _, k := cur.Policy.Tunnel(d.Host, d.Port, d.Program); k != TunnelRefused {
			return nil, nil
		}
	} else if _, ok := cur.Policy.AllowsCall(d.Host, d.Port, d.Program, d.Method, d.Path); ok {
		return nil, nil
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	got, err := s.Store.PutDraft(ctx, Draft{ID: bot.NewID(), Persona: persona, Dest: d, Reason: DraftReason(d), Count: 1, First: now, Last: now})
	if err != nil {
		return nil, err
	}
	return &got, nil
}

// DraftReason is the reason a draft is given: "Allow curl to connect to
// pypi.org:443 (HTTPS)".
func DraftReason(d Dest) string {
	who := "an unknown program"
	if d.Program != "" {
		who = d.Program[strings.LastIndex(d.Program, "/")+1:]
	}
	what := "HTTPS"
	switch {
	case d.Method != "":
		what = "HTTP " + d.Method + " " + d.Path
	case d.Port != 443:
		what = "a tunnel"
	}
	if d.Extension != "" {
		who += fmt.Sprintf(" (extension %q)", d.Extension)
	}
	return fmt.Sprintf("Allow %s to connect to %s (%s)", who, JoinHostPort(d.Host, d.Port), strings.TrimSpace(what))
}

// Item is one network request as listed.
type Item struct {
	Record
	Status     bot.Status `json:"status"`
	DecidedBy  []string   `json:"decided_by,omitempty"`
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
	Decision   string     `json:"decision_reason,omitempty"`
	DenyReason string     `json:"deny_reason,omitempty"`
	Opens      string     `json:"opens"`
}

// HostCount is how often the proxy refused one host and port.
type HostCount struct {
	Dest  string `json:"dest"`
	Count int64  `json:"count"`
}

// Listing answers GET /v1/network/requests.
type Listing struct {
	Requests []Item      `json:"requests"`
	Drafts   []Draft     `json:"drafts,omitempty"`
	ByHost   []HostCount `json:"drafts_by_host"`
	Current  int         `json:"revision"`
}

// List returns the network requests with their status, the drafts
// counted by host and, with all, the drafts themselves.
func (s *Service) List(ctx context.Context, all bool) (*Listing, error) {
	recs, err := s.Store.Records(ctx)
	if err != nil {
		return nil, err
	}
	out := &Listing{Requests: []Item{}, ByHost: []HostCount{}}
	for _, r := range recs {
		it, err := s.item(ctx, r)
		if err != nil {
			continue // expired from the store
		}
		out.Requests = append(out.Requests, it)
	}
	drafts, err := s.Store.Drafts(ctx)
	if err != nil {
		return nil, err
	}
	counts := map[string]int64{}
	for _, d := range drafts {
		counts[JoinHostPort(d.Dest.Host, d.Dest.Port)] += d.Count
	}
	for k, n := range counts {
		out.ByHost = append(out.ByHost, HostCount{Dest: k, Count: n})
	}
	slices.SortFunc(out.ByHost, func(a, b HostCount) int {
		if a.Count != b.Count {
			return int(b.Count - a.Count)
		}
		return strings.Compare(a.Dest, b.Dest)
	})
	if all {
		out.Drafts = drafts
	}
	if cur, err := s.Store.CurrentRevision(ctx); err == nil {
		out.Current = cur.N
	}
	return out, nil
}

func (s *Service) item(ctx context.Context, r Record) (Item, error) {
	req, err := s.Gateway.Get(ctx, r.ID)
	if err != nil {
		return Item{}, err
	}
	it := Item{Record: r, Status: req.Status, DecidedBy: req.DecidedBy, DecidedAt: req.DecidedAt, Decision: req.DecisionReason, Opens: Describe(r.Dest)}
	if req.Status == bot.Denied {
		it.DenyReason = s.denyReason(ctx, req)
	}
	return it, nil
}

// denyReason is the reason given by a voter whose denial counted.
func (s *Service) denyReason(ctx context.Context, req *bot.Request) string {
	reasons, err := s.Store.DenyReasons(ctx, req.ID)
	if err != nil || len(reasons) == 0 {
		return ""
	}
	for _, v := range req.Votes {
		if v.Result == bot.Counted && v.Choice == bot.Deny {
			if r, ok := reasons[v.Voter.String()]; ok {
				return r
			}
		}
	}
	return ""
}

// Resolve finds the request or draft whose id starts with prefix.
func (s *Service) Resolve(ctx context.Context, prefix string) (*Record, *Draft, error) {
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	if prefix == "" || len(prefix) > 64 {
		return nil, nil, bot.Errorf(bot.EInvalid, "an id (or the start of one) is required")
	}
	recs, err := s.Store.Records(ctx)
	if err != nil {
		return nil, nil, err
	}
	drafts, err := s.Store.Drafts(ctx)
	if err != nil {
		return nil, nil, err
	}
	var (
		matches []string
		rec     *Record
		draft   *Draft
	)
	for i := range recs {
		if strings.HasPrefix(recs[i].ID, prefix) {
			matches = append(matches, "request "+recs[i].ID)
			rec = &recs[i]
		}
	}
	for i := range drafts {
		if strings.HasPrefix(drafts[i].ID, prefix) {
			matches = append(matches, "draft "+drafts[i].ID)
			draft = &drafts[i]
		}
	}
	switch len(matches) {
	case 0:
		return nil, nil, bot.Errorf(bot.ENotFound, "no network request or draft starts with %q (see `signoff net requests --all`)", prefix)
	case 1:
		if rec != nil {
			return rec, nil, nil
		}
		return nil, draft, nil
	}
	return nil, nil, bot.Errorf(bot.EInvalid, "%q is the start of more than one id: %s", prefix, strings.Join(matches, ", "))
}

// Answer is what approving or denying tells the person.
type Answer struct {
	Request *bot.Request    `json:"request"`
	Vote    bot.VoteOutcome `json:"vote"`
	Opens   string          `json:"opens"`
	// Applied is set when the approval decided the request.
	Applied *Applied `json:"applied,omitempty"`
	// Filed is set when a draft was filed as a request: sign a reaction
	// to Filed.Request and approve again.
	Filed   *Filed `json:"filed,omitempty"`
	Message string `json:"message"`
}

// Applied is what an approval did to the policy.
type Applied struct {
	Revision int        `json:"revision"`
	Change   ChangeKind `json:"change"`
	Entry    string     `json:"entry,omitempty"`
	Diff     []string   `json:"diff"`
	// Also are the other pending requests the new revision covers,
	// approved with it.
	Also []string `json:"also_approved"`
	Note string   `json:"note,omitempty"`
}

// Approve casts a person's signed approval of request id (b is their
// reaction to the request's event). A draft is filed as a request first
// and returned in Filed, to be approved by a reaction to it. With copy
// (an edited policy, --policy-from) the next revision is that copy,
// checked first; a copy that fails leaves the request waiting.
func (s *Service) Approve(ctx context.Context, id string, b *bot.Ballot, copyName string, copy []byte) (*Answer, error) {
	rec, draft, err := s.Resolve(ctx, id)
	if err != nil {
		return nil, err
	}
	if draft != nil {
		if draft.Request != "" {
			return nil, bot.Errorf(bot.EConflict, "draft %s was filed as request %s: approve that", draft.ID, draft.Request)
		}
		if !s.Boundary.Allows(draft.Dest.Host, draft.Dest.Port) {
			return nil, bot.Errorf(bot.EForbidden, "%v", s.Boundary.Outside(JoinHostPort(draft.Dest.Host, draft.Dest.Port)))
		}
		f, err := s.file(ctx, draft.Persona, draft.Dest, draft.Reason, draft.ID)
		if err != nil {
			return nil, err
		}
		return &Answer{Request: f.Request, Filed: f, Opens: Describe(draft.Dest), Message: f.Message}, nil
	}
	req, err := s.Gateway.Get(ctx, rec.ID)
	if err != nil {
		return nil, err
	}
	if !s.Boundary.Allows(rec.Dest.Host, rec.Dest.Port) || rec.Outside {
		return nil, bot.Errorf(bot.EForbidden, "%v", s.Boundary.Outside(JoinHostPort(rec.Dest.Host, rec.Dest.Port)))
	}
	if req.Status.Final() {
		return nil, bot.Errorf(bot.EConflict, "request %s is already decided: %s", req.ID, bot.Outcome(req))
	}
	if err := s.checkBallot(req, b, bot.Approve); err != nil {
		return nil, err
	}
	if copy != nil {
		cur, err := s.Store.CurrentRevision(ctx)
		if err != nil {
			return nil, err
		}
		pol, err := CheckCopy(copyName, copy, cur.Policy, rec.Dest, s.Boundary)
		if err != nil {
			return nil, bot.Errorf(bot.EInvalid, "the edited policy was not used and request %s keeps waiting:\n%v", req.ID, err)
		}
		if err := s.Store.SetStaged(ctx, req.ID, Staged{Base: cur.N, Policy: pol, By: b.Voter.String()}); err != nil {
			return nil, err
		}
	}
	out, err := s.Gateway.CastVote(ctx, *b)
	if err != nil {
		return nil, err
	}
	ans := &Answer{Vote: out, Opens: Describe(rec.Dest)}
	if out.Status == bot.Approved {
		ans.Applied, err = s.apply(ctx, req.ID)
		if err != nil {
			return nil, err
		}
	}
	ans.Request, _ = s.Gateway.Get(ctx, req.ID)
	ans.Message = answerMessage(ans)
	return ans, nil
}

func answerMessage(a *Answer) string {
	switch {
	case a.Vote.Result != bot.Counted:
		return fmt.Sprintf("your vote was %s: %s; request %s is %s", a.Vote.Result, a.Vote.Reason, a.Vote.RequestID, a.Vote.Status)
	case a.Applied != nil && a.Applied.Change == AlreadyAllowed:
		return fmt.Sprintf("approved; already allowed by revision %d (%s): nothing changed", a.Applied.Revision, a.Applied.Entry)
	case a.Applied != nil:
		s := fmt.Sprintf("approved; revision %d %s %s", a.Applied.Revision, a.Applied.Change, a.Applied.Entry)
		if len(a.Applied.Also) > 0 {
			s += "; also approved, covered by it: " + strings.Join(a.Applied.Also, ", ")
		}
		return s
	}
	return fmt.Sprintf("counted; request %s is %s", a.Vote.RequestID, a.Vote.Status)
}

// Deny casts a person's signed denial with its reason, which a waiting
// agent is told. A denial is always possible, inside the boundary or not.
func (s *Service) Deny(ctx context.Context, id string, b *bot.Ballot, reason string) (*Answer, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return nil, bot.Errorf(bot.EInvalid, "a reason is required: the agent is told it, so it can ask for something narrower")
	}
	if len(reason) > bot.MaxReasonLen || !utf8.ValidString(reason) {
		return nil, bot.Errorf(bot.EInvalid, "reason must be UTF-8 of at most %d bytes", bot.MaxReasonLen)
	}
	rec, draft, err := s.Resolve(ctx, id)
	if err != nil {
		return nil, err
	}
	if draft != nil {
		return nil, bot.Errorf(bot.EInvalid, "%s is a draft, not a request: nobody was asked, so there is nothing to deny", draft.ID)
	}
	req, err := s.Gateway.Get(ctx, rec.ID)
	if err != nil {
		return nil, err
	}
	if req.Status.Final() {
		return nil, bot.Errorf(bot.EConflict, "request %s is already decided: %s", req.ID, bot.Outcome(req))
	}
	if err := s.checkBallot(req, b, bot.Deny); err != nil {
		return nil, err
	}
	// Kept before the vote so a waiter woken by the decision finds it;
	// only a counted denier's reason is ever shown.
	if err := s.Store.SetDenyReason(ctx, req.ID, b.Voter.String(), reason); err != nil {
		return nil, err
	}
	out, err := s.Gateway.CastVote(ctx, *b)
	if err != nil {
		return nil, err
	}
	ans := &Answer{Vote: out, Opens: Describe(rec.Dest)}
	ans.Request, _ = s.Gateway.Get(ctx, req.ID)
	ans.Message = answerMessage(ans)
	if out.Status == bot.Denied && out.Result == bot.Counted {
		ans.Message = fmt.Sprintf("denied request %s: %s", req.ID, reason)
	}
	return ans, nil
}

// checkBallot makes sure a signed reaction is for this request and says
// what the endpoint it came to says: a reaction to another request, or a
// ✅ sent to deny, is refused rather than counted.
func (s *Service) checkBallot(req *bot.Request, b *bot.Ballot, want bot.Choice) error {
	if b == nil {
		return bot.Errorf(bot.EInvalid, "a signed reaction (event) is required")
	}
	if b.Ref.ID == "" || b.Ref.ID != req.EventID {
		return bot.Errorf(bot.EInvalid, "the signed reaction names another request's event, not %s's", req.ID)
	}
	if b.Choice != want {
		return bot.Errorf(bot.EInvalid, "the signed reaction says %s, not %s", b.Choice, want)
	}
	b.RequestID = req.ID
	return nil
}

// onDecided applies a network request approved anywhere: a channel's ✅,
// another replica, the terminal.
func (s *Service) onDecided(ctx context.Context, id string) {
	if kc, ok := s.Store.(KindCache); ok {
		if k, known := kc.KnownKind(id); known && k != bot.KindNetwork {
			return // every replica hears every decision: most are not ours
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := s.Store.Record(ctx, id); err != nil {
		return // not a network request
	}
	if _, err := s.apply(ctx, id); err != nil {
		s.log().Error("apply approved network request", "id", id, "err", err)
	}
}

// reconcile applies network requests approved while this replica's
// subscription was down (recent ones; apply is idempotent).
func (s *Service) reconcile(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	recs, err := s.Store.Records(ctx)
	if err != nil {
		return
	}
	since := s.now().Add(-24 * time.Hour)
	for _, r := range recs {
		if r.CreatedAt.Before(since) {
			continue
		}
		if _, err := s.apply(ctx, r.ID); err != nil {
			s.log().Warn("reconcile network request", "id", r.ID, "err", err)
		}
	}
}

// apply makes the revision an approved request calls for, once: the
// staged copy when it is still based on the current revision, else the
// narrowest rule (or widening); then approves the other pending requests
// it covers. It does nothing for a request that is not approved.
func (s *Service) apply(ctx context.Context, id string) (*Applied, error) {
	rec, err := s.Store.Record(ctx, id)
	if err != nil {
		return nil, err
	}
	req, err := s.Gateway.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if req.Status != bot.Approved {
		return nil, nil
	}
	dest := JoinHostPort(rec.Dest.Host, rec.Dest.Port)
	if !s.Boundary.Allows(rec.Dest.Host, rec.Dest.Port) || rec.Outside {
		// Only a boundary changed since filing gets here (the request was
		// stored deny-only otherwise): the door stays shut.
		return nil, fmt.Errorf("request %s was approved but %v; no revision made", id, s.Boundary.Outside(dest))
	}
	by := strings.Join(req.DecidedBy, ", ")
	if by == "" {
		by = req.DecisionReason
	}
	for range 20 {
		if n, ok, err := s.Store.AppliedAt(ctx, id); err != nil {
			return nil, err
		} else if ok { // applied already (the decision watch, another replica)
			done, err := s.Store.Revision(ctx, n)
			if err != nil {
				return nil, err
			}
			if done.Request != id {
				return &Applied{Revision: n, Change: AlreadyAllowed, Diff: []string{}, Also: []string{}}, nil
			}
			return &Applied{Revision: n, Change: done.Change, Entry: done.Entry, Diff: done.Diff, Also: s.approveCovered(ctx, done, id, by)}, nil
		}
		cur, err := s.Store.CurrentRevision(ctx)
		if err != nil {
			return nil, err
		}
		next, ch := Derive(cur.Policy, rec.Dest)
		note := ""
		if st, err := s.Store.GetStaged(ctx, id); err != nil {
			return nil, err
		} else if st != nil {
			if st.Base == cur.N {
				next, ch = st.Policy, Change{Kind: Replaced, Index: -1}
			} else {
				note = fmt.Sprintf("the edited copy was made on revision %d, but the policy is now at %d: the narrowest rule was applied instead", st.Base, cur.N)
			}
		}
		a := &Applied{Change: ch.Kind, Diff: Diff(cur.Policy, next), Note: note, Also: []string{}}
		if ch.Kind != Replaced {
			a.Entry = ch.Entry.String()
		}
		if ch.Kind == AlreadyAllowed || ch.Kind == Replaced && len(a.Diff) == 0 {
			n, marked, err := s.Store.CommitRevision(ctx, Revision{Request: id})
			if err != nil {
				return nil, err
			}
			if !marked {
				continue // applied meanwhile elsewhere: report that
			}
			a.Revision, a.Change = n, AlreadyAllowed
			a.Also = s.approveCovered(ctx, cur, id, by)
			return a, nil
		}
		rev := Revision{N: cur.N + 1, Policy: next, Diff: a.Diff, By: req.DecidedBy, At: s.now().UTC(), Request: id,
			Why: "approved request " + id + ": " + Describe(rec.Dest), Change: ch.Kind, Entry: a.Entry}
		n, applied, err := s.Store.CommitRevision(ctx, rev)
		if errors.Is(err, ErrMoved) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !applied {
			continue // applied first elsewhere (the decision watch, a replica)
		}
		s.audit(ctx, rev)
		s.log().Info("network policy revision", "n", n, "request", id, "by", req.DecidedBy, "diff", rev.Diff)
		a.Revision = n
		a.Also = s.approveCovered(ctx, rev, id, by)
		return a, nil
	}
	return nil, bot.Errorf(bot.EUnavailable, "the policy kept changing while applying request %s", id)
}

// approveCovered approves every other pending network request rev lets
// through, inside the boundary, saying why on its cards.
func (s *Service) approveCovered(ctx context.Context, rev Revision, by, people string) []string {
	recs, err := s.Store.Records(ctx)
	if err != nil {
		s.log().Warn("list network requests", "err", err)
		return []string{}
	}
	also := []string{}
	for _, r := range recs {
		if r.ID == by || r.Outside || !s.Boundary.Allows(r.Dest.Host, r.Dest.Port) {
			continue
		}
		if _, ok := rev.Policy.Allows(r.Dest); !ok {
			continue
		}
		reason := fmt.Sprintf("covered by network policy revision %d, made when %s approved request %s", rev.N, people, by)
		req, err := s.Gateway.Get(ctx, r.ID)
		if err != nil {
			continue
		}
		if req.Status == bot.Approved && req.DecisionReason == reason {
			also = append(also, r.ID) // approved with it by another path
			continue
		}
		if req.Status != bot.Pending {
			continue
		}
		won, err := s.Gateway.Conclude(ctx, r.ID, bot.Approved, reason)
		if err != nil {
			s.log().Warn("approve covered request", "id", r.ID, "err", err)
			continue
		}
		if !won { // decided meanwhile: by this same revision, or otherwise
			if req, err = s.Gateway.Get(ctx, r.ID); err != nil || req.Status != bot.Approved || req.DecisionReason != reason {
				continue
			}
		}
		// Its own decision is seen by onDecided too; applying it finds it
		// already allowed and marks it, nothing more.
		also = append(also, r.ID)
	}
	return also
}

func (s *Service) audit(ctx context.Context, rev Revision) {
	if s.Audit == nil {
		return
	}
	if err := s.Audit.Append(context.WithoutCancel(ctx), bot.AuditEntry{Type: "network policy revision", RequestID: rev.Request, Data: rev}); err != nil {
		s.log().Error("audit policy revision", "n", rev.N, "err", err)
	}
}

// Find returns the request or draft of l whose id starts with prefix, as
// Resolve does on the store (for the CLI, which must sign for the exact
// request).
func (l *Listing) Find(prefix string) (*Item, *Draft, error) {
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	if prefix == "" {
		return nil, nil, bot.Errorf(bot.EInvalid, "an id (or the start of one) is required")
	}
	var (
		matches []string
		it      *Item
		dr      *Draft
	)
	for i := range l.Requests {
		if strings.HasPrefix(l.Requests[i].ID, prefix) {
			matches, it = append(matches, "request "+l.Requests[i].ID), &l.Requests[i]
		}
	}
	for i := range l.Drafts {
		if strings.HasPrefix(l.Drafts[i].ID, prefix) {
			matches, dr = append(matches, "draft "+l.Drafts[i].ID), &l.Drafts[i]
		}
	}
	switch len(matches) {
	case 0:
		return nil, nil, bot.Errorf(bot.ENotFound, "no network request or draft starts with %q (see `signoff net requests --all`)", prefix)
	case 1:
		return it, dr, nil
	}
	return nil, nil, bot.Errorf(bot.EInvalid, "%q is the start of more than one id: %s", prefix, strings.Join(matches, ", "))
}
