package permissions

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/grants"
)

// Check is one call an agent asks about (POST /v1/check).
type Check struct {
	Persona string   `json:"persona"`
	Kind    bot.Kind `json:"kind,omitempty"`
	// Action is the command line, destination or text; for a tool call,
	// Tool and Input instead.
	Action string          `json:"action,omitempty"`
	Tool   string          `json:"tool,omitempty"`
	Input  json.RawMessage `json:"input,omitempty"`
	Cwd    string          `json:"cwd,omitempty"`
	// Mode may ask for a stricter mode than the persona's, never a looser.
	Mode   string `json:"mode,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Wait makes an ask into a request and waits (at most MaxWait) for it.
	Wait    bool         `json:"wait,omitempty"`
	Timeout bot.Duration `json:"timeout,omitempty"`
	// Explicit: the agent itself asked for approval (MCP request_approval):
	// only a deny rule or a grant resolves it; otherwise people decide.
	Explicit bool `json:"explicit,omitempty"`
	// Nonce is the client's random value (bot.NewNonce), carried back in
	// the signed receipt of an allow, so a receipt cannot be replayed.
	Nonce string `json:"nonce,omitempty"`
	// Explain decides without acting: nothing is audited, no grant use is
	// counted, no reviewer asked, no request made (permissions explain).
	Explain bool `json:"explain,omitempty"`
}

// Decisions (Result.Decision).
const (
	Allow = "allow"
	Deny  = "deny"
	Ask   = "ask"
)

// What resolved a check (Result.By).
const (
	ByDenyRule  = "deny-rule"
	ByGrant     = "grant"
	ByAllowRule = "allow-rule"
	BySafe      = "safe"
	ByCaution   = "caution"
	ByPlan      = "plan"
	ByReviewer  = "reviewer"
	ByPeople    = "people"
)

// Result is the decision object of docs/design.md#http-api.
type Result struct {
	Decision string    `json:"decision"` // allow, deny, ask
	Level    bot.Level `json:"level"`
	Reasons  []string  `json:"reasons"`
	Rule     string    `json:"rule,omitempty"`
	Grant    string    `json:"grant,omitempty"`
	Mode     string    `json:"mode"`
	// By says what resolved it; Why says it in a sentence.
	By  string `json:"by"`
	Why string `json:"why"`
	// Caution is the persona's caution setting ("allow": the hook allows
	// caution calls itself; empty: it leaves them to the agent).
	Caution string `json:"caution,omitempty"`
	// GrantScope is what an "always" answer would grant.
	GrantScope *bot.GrantScope `json:"grant_scope,omitempty"`
	// Receipt is the gateway's signed approval of an allow made without a
	// request (ReceiptID names it): the client believes an allow only with
	// it, for the exact action it asked about (Asked) and its nonce.
	Receipt   json.RawMessage `json:"receipt,omitempty"`
	ReceiptID string          `json:"receipt_id,omitempty"`
	Review    *Verdict        `json:"review,omitempty"`
	Request   *bot.Request    `json:"request,omitempty"`
	Layers    []Layer         `json:"layers,omitempty"`
}

// Requests is how a check puts a call before people.
type Requests interface {
	Submit(ctx context.Context, n bot.NewRequest) (*bot.Request, error)
	Wait(ctx context.Context, id string, d time.Duration) (*bot.Request, error)
}

// Classifier gives commands and tool calls their risk (risk.Classifier).
type Classifier interface {
	Classify(kind bot.Kind, action string) bot.Assessment
	Command(cmd string) bot.Assessment
	ToolCall(tool string, input json.RawMessage, cwd string) bot.Assessment
}

// PersonaStore returns personas (bot.Store is one).
type PersonaStore interface {
	Persona(ctx context.Context, name string) (bot.Persona, error)
}

// CommandLister is a Classifier that can also list the simple commands a
// command line would run, wrappers seen through (risk.Classifier is one).
type CommandLister interface {
	Commands(cmd string) []string
}

// seeThrough adds to a shell call's subjects the commands its wrappers
// run (`sudo git push`, `bash -c 'git push'`, `env X=1 nohup git push`),
// so deny and ask rules hold through them. Subjects only tighten: a call
// is allowed only when every subject is, so `sudo X` is never allowed by
// a rule that allows X.
func (c *Checker) seeThrough(call Call) Call {
	l, ok := c.Classifier.(CommandLister)
	if !ok || call.Tool != "bash" || call.Line == "" {
		return call
	}
	have := make(map[string]bool, len(call.Subjects))
	for _, s := range call.Subjects {
		have[s] = true
	}
	for _, s := range l.Commands(call.Line) {
		if s = normalize(s); s != "" && !have[s] {
			have[s] = true
			call.Subjects = append(call.Subjects, s)
		}
	}
	return call
}

// Checker decides /v1/check: the one place where rules, grants, modes, the
// reviewer and the classifier's level decide whether a call may run.
type Checker struct {
	Personas   PersonaStore
	Classifier Classifier
	Grants     grants.Store // nil: no grants
	Audit      bot.Auditor  // nil: not audited
	Requests   Requests     // nil: an ask cannot become a request
	Reviewer   *ReviewClient
	// Notary signs the receipt of every allow made without a person
	// (nil: none; clients then believe only safe calls).
	Notary bot.Notary
	// RepoRules finds a repository's rules for a cwd (nil: FindRepoRules).
	RepoRules func(cwd string) *RepoRules
	Now       func() time.Time
	// MaxWait bounds a waiting check (default 50s); the client waits on.
	MaxWait time.Duration
}

func (c *Checker) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

var modeRank = map[string]int{bot.ModeAuto: 0, bot.ModeAsk: 1, bot.ModePlan: 2}

// Validate checks and normalises a check.
func Validate(ch *Check) error {
	ch.Action = strings.TrimSpace(ch.Action)
	switch {
	case ch.Persona == "":
		return bot.Errorf(bot.EInvalid, "persona is required")
	case ch.Tool == "" && ch.Action == "":
		return bot.Errorf(bot.EInvalid, "give an action, or a tool and its input")
	case len(ch.Action) > bot.MaxActionLen || len(ch.Input) > bot.MaxActionLen:
		return bot.Errorf(bot.EInvalid, "action or input is longer than %d bytes", bot.MaxActionLen)
	case len(ch.Reason) > bot.MaxReasonLen:
		return bot.Errorf(bot.EInvalid, "reason is longer than %d bytes", bot.MaxReasonLen)
	case !utf8.ValidString(ch.Action) || !utf8.ValidString(ch.Reason) || !utf8.ValidString(ch.Cwd):
		return bot.Errorf(bot.EInvalid, "action, reason and cwd must be UTF-8")
	case ch.Cwd != "" && (!path.IsAbs(ch.Cwd) || len(ch.Cwd) > 4096):
		return bot.Errorf(bot.EInvalid, "cwd %q must be an absolute path", ch.Cwd)
	case ch.Mode != "" && modeRank[ch.Mode] == 0 && ch.Mode != bot.ModeAuto:
		return bot.Errorf(bot.EInvalid, "mode %q is not ask, plan or auto", ch.Mode)
	case ch.Timeout < 0:
		return bot.Errorf(bot.EInvalid, "timeout must be positive")
	}
	if ch.Cwd != "" {
		ch.Cwd = path.Clean(ch.Cwd)
	}
	if ch.Tool != "" {
		if !toolNameRE.MatchString(ch.Tool) {
			return bot.Errorf(bot.EInvalid, "tool %q is not a tool name", ch.Tool)
		}
		in := strings.TrimSpace(string(ch.Input))
		if in == "" || in == "null" {
			ch.Input = json.RawMessage("{}")
		} else if !json.Valid(ch.Input) || in[0] != '{' {
			return bot.Errorf(bot.EInvalid, "input must be a JSON object")
		}
		ch.Kind = bot.KindTool
	}
	if ch.Kind == "" {
		ch.Kind = bot.KindCommand
	}
	switch ch.Kind {
	case bot.KindCommand, bot.KindNetwork, bot.KindText:
		if ch.Tool == "" && ch.Action == "" {
			return bot.Errorf(bot.EInvalid, "action is required")
		}
	case bot.KindTool:
		if ch.Tool == "" {
			return bot.Errorf(bot.EInvalid, "a tool check names its tool")
		}
	default:
		return bot.Errorf(bot.EInvalid, "kind %q is not one of command, tool, network, text", ch.Kind)
	}
	return nil
}

// Check decides one call. Order (docs/design.md#permission-rules-modes-and-grants): a deny rule denies; a live
// grant that covers the call allows; an ask rule asks; an allow rule allows
// (a dangerous call only by an exact rule); otherwise by level: safe runs,
// caution runs (audited), dangerous asks. plan denies whatever is not safe;
// auto puts what would ask to the reviewer first. Every call resolved
// without a person is one audit record saying what resolved it.
func (c *Checker) Check(ctx context.Context, ch Check) (*Result, error) {
	return c.CheckWith(ctx, ch, c.Requests)
}

// CheckWith is Check putting an ask to people through reqs (the HTTP API
// passes one that withdraws the request should its caller go away).
func (c *Checker) CheckWith(ctx context.Context, ch Check, reqs Requests) (*Result, error) {
	if err := Validate(&ch); err != nil {
		return nil, err
	}
	p, err := c.Personas.Persona(ctx, ch.Persona)
	if err != nil {
		return nil, err
	}
	mode := p.Mode
	if mode == "" {
		mode = bot.ModeAsk
	}
	if ch.Mode != "" && modeRank[ch.Mode] > modeRank[mode] {
		mode = ch.Mode
	}
	call := c.seeThrough(callOf(ch.Kind, ch.Action, ch.Tool, ch.Input, ch.Cwd))
	a := c.classify(ch)
	var repo *RepoRules
	if call.Tool != "network" && call.Tool != "text" {
		find := c.RepoRules
		if find == nil {
			find = FindRepoRules
		}
		repo = find(ch.Cwd)
	}
	ev := Evaluate(p, call, repo)
	res := &Result{Level: a.Level, Reasons: a.Reasons, Mode: mode, Caution: p.Caution, Layers: ev.Layers}
	if ev.Rule != nil {
		res.Rule = ruleText(*ev.Rule)
	}
	gc := grantCall(call, ev, ch, a)
	ttl := p.GrantTTL
	if ttl <= 0 {
		ttl = bot.DefaultGrantTTL
	}
	if call.Tool != "text" {
		res.GrantScope = grants.ScopeOf(gc, ttl)
	}

	resolve := func(decision, by, why string) (*Result, error) {
		res.Decision, res.By, res.Why = decision, by, why
		if ch.Explain {
			return res, nil
		}
		if decision == Allow {
			if err := c.seal(ch, res); err != nil {
				return nil, err
			}
		}
		return res, c.audit(ctx, ch, res)
	}
	if ev.Effect == bot.EffectDeny {
		return resolve("deny", ByDenyRule, "denied by the rule "+res.Rule)
	}
	if mode == bot.ModePlan {
		switch {
		case ch.Explicit || ev.Effect == bot.EffectAsk:
			return resolve("deny", ByPlan, "mode plan asks no one, and this call would ask")
		case a.Level != bot.Safe:
			return resolve("deny", ByPlan, "mode plan is read-only: only safe calls run, and this one is "+string(a.Level))
		}
	}
	if g, ok, err := c.grantFor(ctx, p, gc, call, !ch.Explain); err != nil {
		return nil, err
	} else if ok {
		res.Grant = g.ID
		return resolve("allow", ByGrant, "allowed by grant "+g.ID+" ("+g.Text+", by "+strings.Join(g.By, ", ")+")")
	}
	if !ch.Explicit && ev.Effect != bot.EffectAsk {
		switch {
		case ev.Effect == bot.EffectAllow && (a.Level != bot.Dangerous || ev.Exact):
			return resolve("allow", ByAllowRule, "allowed by the rule "+res.Rule)
		case ev.Effect == bot.EffectAllow:
			res.Why = "dangerous: the rule " + res.Rule + " has a wildcard, and an allow rule lets a dangerous call through only when it is the exact command"
		case a.Level == bot.Safe:
			return resolve("allow", BySafe, "safe")
		case a.Level == bot.Caution:
			return resolve("allow", ByCaution, "caution: runs, and is audited")
		}
	}
	// Unresolved: the reviewer (mode auto), then people.
	if mode == bot.ModeAuto && p.Reviewer != nil && !ch.Explicit && ch.Explain {
		res.Why = "mode auto: the reviewer at " + p.Reviewer.URL + " would be asked first; then people"
	}
	if mode == bot.ModeAuto && p.Reviewer != nil && !ch.Explicit && !ch.Explain {
		v := c.review(ctx, p, ch, a)
		res.Review = &v
		switch {
		case v.Verdict == VerdictDeny:
			return resolve("deny", ByReviewer, "denied by the reviewer: "+v.Reason)
		case v.Verdict == VerdictAllow && a.Level != bot.Dangerous:
			return resolve("allow", ByReviewer, "allowed by the reviewer: "+v.Reason)
		}
	}
	res.Decision, res.By = "ask", ByPeople
	if res.Why == "" {
		switch {
		case ch.Explicit:
			res.Why = "the agent asked: people decide"
		case ev.Effect == bot.EffectAsk:
			res.Why = "the rule " + res.Rule + " asks people"
		default:
			res.Why = string(a.Level) + ": people decide"
		}
	}
	if res.Review != nil {
		res.Why += "; the reviewer said " + res.Review.Verdict
		if res.Review.Reason != "" {
			res.Why += " (" + res.Review.Reason + ")"
		}
	}
	if !ch.Wait || ch.Explain {
		return res, nil
	}
	return c.ask(ctx, ch, call, res, reqs)
}

// ask makes the call a request with its grant scope and waits a while.
func (c *Checker) ask(ctx context.Context, ch Check, call Call, res *Result, reqs Requests) (*Result, error) {
	if reqs == nil {
		return nil, bot.Errorf(bot.EUnavailable, "this gateway cannot put requests to people")
	}
	n := asked(ch, call)
	n.GrantScope = res.GrantScope
	r, err := reqs.Submit(ctx, n)
	if err != nil {
		return nil, err
	}
	wait := c.MaxWait
	if wait <= 0 {
		wait = 50 * time.Second
	}
	if !r.Status.Final() {
		if got, err := reqs.Wait(ctx, r.ID, wait); err == nil && got != nil {
			r = got
		}
	}
	res.Request = r
	switch r.Status {
	case bot.Approved:
		res.Decision, res.Why = "allow", bot.Outcome(r)
	case bot.Denied, bot.Expired:
		res.Decision, res.Why = "deny", bot.Outcome(r)
	}
	return res, nil
}

// Asked is the request the gateway files for a check that asks people,
// and the action an allow's receipt is for: what a client verifies a
// receipt against.
func Asked(ch Check) (bot.NewRequest, error) {
	if err := Validate(&ch); err != nil {
		return bot.NewRequest{}, err
	}
	return asked(ch, callOf(ch.Kind, ch.Action, ch.Tool, ch.Input, ch.Cwd)), nil
}

func asked(ch Check, call Call) bot.NewRequest {
	n := bot.NewRequest{Persona: ch.Persona, Kind: ch.Kind, Action: requestAction(ch), Reason: ch.Reason, Timeout: ch.Timeout, Nonce: ch.Nonce}
	if ch.Kind == bot.KindTool && call.Tool == "bash" && strings.TrimSpace(call.Line) != "" {
		// People read a shell tool's command, classified as a command.
		n.Kind, n.Action = bot.KindCommand, call.Line
	}
	return n
}

// seal signs an allow made without a person.
func (c *Checker) seal(ch Check, res *Result) error {
	if c.Notary == nil {
		return nil
	}
	n := asked(ch, callOf(ch.Kind, ch.Action, ch.Tool, ch.Input, ch.Cwd))
	rc := bot.Receipt{
		RequestID: "check-" + bot.NewID(), Persona: ch.Persona, Kind: n.Kind, ActionDigest: bot.ActionDigest(n.Kind, n.Action),
		Nonce: ch.Nonce, Status: bot.Approved, DecidedBy: []string{res.By}, DecidedAt: c.now().UTC(), Reason: res.Why,
	}
	raw, err := c.Notary.SealReceipt(rc, c.now())
	if err != nil {
		return bot.Errorf(bot.EInternal, "seal the allow: %v", err)
	}
	res.Receipt, res.ReceiptID = raw, rc.RequestID
	return nil
}

// requestAction is the action people read: the command, or the tool call
// in the classifier's tool form, with its cwd.
func requestAction(ch Check) string {
	if ch.Kind != bot.KindTool {
		return ch.Action
	}
	b, err := json.Marshal(map[string]any{"tool_name": ch.Tool, "tool_input": ch.Input, "cwd": ch.Cwd})
	if err != nil || len(b) > bot.MaxActionLen {
		return ch.Tool + " " + string(ch.Input)
	}
	return string(b)
}

func (c *Checker) classify(ch Check) bot.Assessment {
	if c.Classifier == nil {
		return bot.Assessment{Level: bot.Dangerous, Reasons: []string{"no classifier configured"}}
	}
	var a bot.Assessment
	switch {
	case ch.Kind == bot.KindTool && ch.Tool == "apply_patch":
		a = c.patch(ch)
	case ch.Kind == bot.KindTool:
		a = c.Classifier.ToolCall(ch.Tool, ch.Input, ch.Cwd)
	default:
		a = c.Classifier.Classify(ch.Kind, ch.Action)
	}
	if a.Level == "" {
		a = bot.Assessment{Level: bot.Dangerous, Reasons: []string{"the classifier gave no level"}}
	}
	if a.Reasons == nil {
		a.Reasons = []string{}
	}
	return a
}

// patch classifies an apply_patch call as the edits it makes: each path
// as an Edit of that file; the worst wins. No path is dangerous.
func (c *Checker) patch(ch Check) bot.Assessment {
	var f struct {
		Command string `json:"command"`
		Input   string `json:"input"`
	}
	_ = json.Unmarshal(ch.Input, &f)
	text := f.Command
	if text == "" {
		text = f.Input
	}
	paths := PatchPaths(text)
	if len(paths) == 0 {
		return bot.Assessment{Level: bot.Dangerous, Reasons: []string{"apply_patch names no file it changes"}}
	}
	out := bot.Assessment{Level: bot.Safe, Reasons: []string{}}
	for _, p := range paths {
		in, _ := json.Marshal(map[string]string{"file_path": p})
		a := c.Classifier.ToolCall("Edit", in, ch.Cwd)
		if strictLevel(a.Level) > strictLevel(out.Level) {
			out.Level = a.Level
		}
		for _, r := range a.Reasons {
			if !contains(out.Reasons, r) {
				out.Reasons = append(out.Reasons, r)
			}
		}
	}
	return out
}

func strictLevel(l bot.Level) int {
	switch l {
	case bot.Safe:
		return 0
	case bot.Caution:
		return 1
	}
	return 2
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// grantCall is the call as grants see it: its workspace is the persona's
// workspace glob the cwd is in, else the cwd itself.
func grantCall(call Call, ev Evaluation, ch Check, a bot.Assessment) grants.Call {
	ws := ev.Workspace
	if ws == "" {
		ws = ch.Cwd
	}
	gc := grants.Call{Tool: call.Tool, Line: call.Line, Cwd: ch.Cwd, Workspace: ws, Level: a.Level, Reasons: a.Reasons}
	if call.Tool == "network" && len(call.Subjects) == 1 {
		gc.Target = call.Subjects[0]
	}
	return gc
}

// grantFor finds a live grant of p that covers the call and counts its use.
func (c *Checker) grantFor(ctx context.Context, p bot.Persona, gc grants.Call, call Call, use bool) (grants.Grant, bool, error) {
	if c.Grants == nil || call.Tool == "text" {
		return grants.Grant{}, false, nil
	}
	gs, err := c.Grants.Grants(ctx, p.Name, c.now())
	if err != nil {
		return grants.Grant{}, false, err
	}
	m := &grants.Maker{Store: c.Grants, Audit: c.Audit, Now: c.Now}
	for _, g := range gs {
		if !grants.Covers(g.Scope, gc) {
			continue
		}
		if !use {
			return g, true, nil
		}
		ok, err := m.Use(ctx, g, map[string]any{"persona": p.Name, "tool": call.Name, "action": firstNonEmpty(call.Line, strings.Join(call.Subjects, " ")), "cwd": call.Cwd})
		if err != nil {
			return grants.Grant{}, false, err
		}
		if ok {
			return g, true, nil
		}
	}
	return grants.Grant{}, false, nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (c *Checker) audit(ctx context.Context, ch Check, res *Result) error {
	if c.Audit == nil {
		return nil
	}
	data := map[string]any{
		"persona": ch.Persona, "kind": ch.Kind, "action": ch.Action, "tool": ch.Tool, "cwd": ch.Cwd,
		"decision": res.Decision, "by": res.By, "why": res.Why, "rule": res.Rule, "grant": res.Grant,
		"mode": res.Mode, "level": res.Level, "reasons": res.Reasons, "at": c.now().UTC(),
	}
	if ch.Tool != "" {
		data["input"] = ch.Input
	}
	if err := c.Audit.Append(context.WithoutCancel(ctx), bot.AuditEntry{Type: "check", Data: data}); err != nil {
		// The audit fails closed: what cannot be recorded does not run.
		return bot.Errorf(bot.EUnavailable, "audit log: %v; not allowed", err)
	}
	return nil
}

// ruleText is a rule as explain and the decision show it.
func ruleText(r bot.Rule) string {
	s := fmt.Sprintf("%s: %q → %s", r.Tool, r.Pattern, r.Effect)
	if r.Where != "" {
		s += " (" + r.Where + ")"
	}
	return s
}
