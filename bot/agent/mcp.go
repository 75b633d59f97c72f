package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/permissions"
)

// MCPOptions configures the MCP server.
type MCPOptions struct {
	Gateway Gateway
	// Checker is the gateway's /v1/check: a deny rule or a live grant
	// answers at once; anything else becomes a request for people.
	Checker    Checker
	Classifier Classifier
	// Persona is used when a call names none.
	Persona string
	// LockPersona refuses calls that name another persona, so the agent
	// cannot shop for a more lenient electorate.
	LockPersona bool
	Version     string
	// Poll is how often a waiting request_approval sends progress, when
	// the client asked for it (0: 10s).
	Poll   time.Duration
	Logger *slog.Logger
	// Verify checks an approval's receipt against the pinned gateway key;
	// nil: no approval is believed.
	Verify Verifier
	// PinCheck checks the request's signed event when it is made.
	PinCheck PinCheck
	// ProgressEvery is how often a waiting request_approval tells the
	// client it is alive (0: DefaultProgressEvery); the first goes at once.
	ProgressEvery time.Duration
}

// DefaultProgressEvery keeps an MCP client's request timer from running
// out while a person decides: clients that reset their timeout on progress
// (the official SDKs' resetTimeoutOnProgress) then wait as long as people take.
const DefaultProgressEvery = 3 * time.Second

// ApprovalIn is request_approval's input.
type ApprovalIn struct {
	Action  string `json:"action" jsonschema:"what you want to do: a shell command, a tool call, a network destination, or plain words (deploy v2 to prod)"`
	Reason  string `json:"reason,omitempty" jsonschema:"why you want to do it; people read this before they decide"`
	Persona string `json:"persona,omitempty" jsonschema:"the persona whose people decide (leave it out: the server asks only the persona it was started with, and refuses calls naming another)"`
	Kind    string `json:"kind,omitempty" jsonschema:"command, tool, network or text (default text; say command for a shell command so its risk is shown)"`
}

// ApprovalOut is request_approval's result.
type ApprovalOut struct {
	RequestID string   `json:"request_id"`
	Status    string   `json:"status" jsonschema:"approved, denied or expired"`
	Approved  bool     `json:"approved" jsonschema:"true only when people approved: proceed only then"`
	DecidedBy []string `json:"decided_by" jsonschema:"who decided"`
	Reason    string   `json:"reason" jsonschema:"the outcome, and why when no one decided"`
	Level     string   `json:"level" jsonschema:"the action's risk: safe, caution or dangerous"`
	Reasons   []string `json:"reasons" jsonschema:"why it has that risk"`
}

// ClassifyIn is the classify tool's input.
type ClassifyIn struct {
	Command string `json:"command" jsonschema:"a shell command line (bash syntax)"`
}

// NewMCPServer returns an MCP server with two tools: request_approval,
// which asks the persona's people and blocks until they decide, and
// classify, which gives a shell command its risk. Run it on a transport
// (stdio for `signoff mcp`).
func NewMCPServer(o MCPOptions) *mcp.Server {
	v := o.Version
	if v == "" {
		v = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "signoff", Title: "signoff approval gateway", Version: v},
		&mcp.ServerOptions{Logger: o.Logger, Instructions: "Before anything irreversible (deleting data, force-pushing, deploying, publishing, spending money), " +
			"call request_approval and proceed only when it returns approved=true. A denial or an expiry is final: do not try to reach the same result another way."})
	mcp.AddTool(s, &mcp.Tool{
		Name:  "request_approval",
		Title: "Ask people to approve an action",
		Description: "Asks the people who own this agent to approve an action, and blocks until they answer " +
			"(or the persona's timeout passes: silence is a deny). Proceed only when approved is true.",
	}, o.requestApproval)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "classify",
		Title:       "Risk of a shell command",
		Description: "Gives a shell command its risk level (safe, caution, dangerous) and the reasons, without running it or asking anyone.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, o.classify)
	return s
}

func (o MCPOptions) classify(_ context.Context, _ *mcp.CallToolRequest, in ClassifyIn) (*mcp.CallToolResult, Verdict, error) {
	if o.Classifier == nil {
		return nil, Verdict{}, errors.New("no classifier configured")
	}
	if strings.TrimSpace(in.Command) == "" {
		return nil, Verdict{}, errors.New("command is empty")
	}
	v := Classify(o.Classifier, in.Command)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: v.String()}}}, v, nil
}

func (o MCPOptions) requestApproval(ctx context.Context, req *mcp.CallToolRequest, in ApprovalIn) (*mcp.CallToolResult, ApprovalOut, error) {
	var none ApprovalOut
	if o.Gateway == nil {
		return nil, none, errors.New("no gateway configured; not approved")
	}
	if strings.TrimSpace(in.Action) == "" {
		return nil, none, errors.New("action is empty; say what you want to do")
	}
	n := bot.NewRequest{Persona: in.Persona, Action: in.Action, Reason: in.Reason, Kind: bot.Kind(in.Kind)}
	if o.LockPersona && n.Persona != "" && n.Persona != o.Persona {
		return nil, none, fmt.Errorf("this server asks persona %q only, not %q; not approved", o.Persona, n.Persona)
	}
	if n.Persona == "" {
		n.Persona = o.Persona
	}
	if n.Kind == "" {
		n.Kind = bot.KindText
	}
	// Progress from the first second, then every few seconds, for as long
	// as the call lasts (the gateway's check may hold the call for a while
	// before it says which request it made): a client that resets its
	// timeout on progress then waits as long as people take.
	var current atomic.Pointer[bot.Request]
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		stop := o.keepAlive(ctx, req, token, n.Persona, &current)
		defer stop()
	}
	var r *bot.Request
	n.Nonce = bot.NewNonce()
	if o.Checker != nil {
		ch := permissions.Check{Persona: n.Persona, Kind: n.Kind, Action: n.Action, Reason: n.Reason, Explicit: true, Wait: true, Nonce: n.Nonce}
		res, err := o.Checker.Check(ctx, ch)
		if err != nil {
			return nil, none, fmt.Errorf("could not ask for approval: %s; not approved", errorText(err))
		}
		if res.Request == nil {
			return resolvedAtOnce(o.Verify, ch, res, n)
		}
		if asked, err := permissions.Asked(ch); err == nil {
			n = asked
		}
		r = res.Request
	} else {
		var err error
		if r, err = Submit(ctx, o.Gateway, n); err != nil {
			return nil, none, fmt.Errorf("could not ask for approval: %s; not approved", errorText(err))
		}
	}
	if err := CheckPin(o.PinCheck, o.Gateway, r); err != nil {
		return nil, none, fmt.Errorf("%s; not approved", errorText(err))
	}

	progress := func(next *bot.Request) { current.Store(next) }
	current.Store(r)
	poll := o.Poll
	if poll <= 0 {
		poll = 10 * time.Second
	}
	r, err := Await(ctx, o.Gateway, r, poll, progress)
	if err != nil {
		return nil, none, fmt.Errorf("request %s: %s; not approved", r.ID, errorText(err))
	}
	approved, why := Approved(o.Verify, n, r)
	if why != "" {
		return nil, none, fmt.Errorf("request %s: %s; not approved", r.ID, why)
	}
	out := ApprovalOut{
		RequestID: r.ID, Status: string(r.Status), Approved: approved,
		DecidedBy: r.DecidedBy, Reason: r.DecisionReason, Level: string(r.Level), Reasons: r.Reasons,
	}
	if out.DecidedBy == nil {
		out.DecidedBy = []string{}
	}
	if out.Reasons == nil {
		out.Reasons = []string{}
	}
	if out.Reason == "" {
		out.Reason = bot.Outcome(r)
	}
	text := bot.Outcome(r) + " (request " + r.ID + ")"
	if approved {
		text += ". Approved: you may proceed with exactly this: " + clip(r.Action, 500)
	} else {
		text += ". Not approved: do not proceed, and do not try to reach the same result another way."
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
}

// keepAlive sends a progress notification at once and every
// ProgressEvery until stop is called: what it waits for, and how long.
func (o MCPOptions) keepAlive(ctx context.Context, req *mcp.CallToolRequest, token any, persona string, current *atomic.Pointer[bot.Request]) (stop func()) {
	every := o.ProgressEvery
	if every <= 0 {
		every = DefaultProgressEvery
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		last := 0.0
		for {
			now := time.Now()
			p := max(now.Sub(start).Seconds(), last+0.001)
			last = p
			params := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p,
				Message: "asking persona " + persona + "'s people; waiting for the gateway"}
			if r := current.Load(); r != nil {
				params.Total = p + max(r.Deadline.Sub(now).Seconds(), 0)
				params.Message = "request " + r.ID + ": " + Waiting(r, now)
			}
			if err := req.Session.NotifyProgress(ctx, params); err != nil && ctx.Err() == nil && o.Logger != nil {
				o.Logger.Debug("progress notification", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// resolvedAtOnce answers a request_approval the gateway decided without
// people: a deny rule, or a live grant.
func resolvedAtOnce(v Verifier, ch permissions.Check, res *permissions.Result, n bot.NewRequest) (*mcp.CallToolResult, ApprovalOut, error) {
	out := ApprovalOut{
		Status: string(bot.Denied), DecidedBy: []string{},
		Reason: res.Why, Level: string(res.Level), Reasons: res.Reasons,
	}
	if res.Decision == permissions.Allow {
		ok, why := CheckAllowed(v, ch, res)
		out.Approved = ok
		if !ok {
			res.Why = why
			out.Reason = why
		}
	}
	if out.Reasons == nil {
		out.Reasons = []string{}
	}
	text := "Not approved: " + res.Why + ". Do not proceed, and do not try to reach the same result another way."
	if out.Approved {
		out.Status = string(bot.Approved)
		text = "Approved (" + res.Why + "): you may proceed with exactly this: " + clip(n.Action, 500)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
}
