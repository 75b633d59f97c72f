package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/permissions"
	"github.com/signoff/signoff/bot/wait"
)

// Hook decisions, as Claude Code's PreToolUse hook output names them.
const (
	Allow = "allow"
	Deny  = "deny"
	Ask   = "ask"
)

// MaxHookInput is the most hook JSON read from stdin; more is a deny.
const MaxHookInput = 8 << 20

// DefaultHookTimeout is how long a hook waits for people by default. It
// must stay below the hook timeout in the agent's settings (600s in
// docs/guide.md, agents): an agent that kills a hook lets the tool run.
const DefaultHookTimeout = 9 * time.Minute

// HookInput is the JSON Claude Code (and Codex, with the same schema)
// writes to a PreToolUse hook's stdin. Fields signoff does not use are
// ignored.
type HookInput struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
}

// HookDecision is what the hook answers.
type HookDecision struct {
	Decision string // Allow, Deny or Ask
	Reason   string
}

// HookOutput is the JSON a PreToolUse hook prints on stdout.
type HookOutput struct {
	HookSpecificOutput HookSpecificOutput `json:"hookSpecificOutput"`
}

// HookSpecificOutput carries the permission decision.
type HookSpecificOutput struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason"`
}

// maxHookReason bounds the reason shown to the agent.
const maxHookReason = 4000

// Output is d as the hook prints it. A decision that is not allow or ask
// is written deny.
func (d HookDecision) Output() HookOutput {
	dec := d.Decision
	if dec != Allow && dec != Ask {
		dec = Deny
	}
	return HookOutput{HookSpecificOutput{
		HookEventName:            "PreToolUse",
		PermissionDecision:       dec,
		PermissionDecisionReason: clip(d.Reason, maxHookReason),
	}}
}

// WriteHookDecision prints d as hook output JSON, one line.
func WriteHookDecision(w io.Writer, d HookDecision) error {
	b, err := json.Marshal(d.Output())
	if err != nil { // cannot happen: strings only
		b = []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"signoff: internal error"}}`)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func deny(format string, args ...any) HookDecision {
	return HookDecision{Decision: Deny, Reason: "signoff: " + fmt.Sprintf(format, args...)}
}

// ParseHookInput reads and checks a PreToolUse hook's JSON: an object
// naming a tool, with an object as the tool's input, for the PreToolUse
// event (or none named; pre_tool_use is the same event).
func ParseHookInput(b []byte) (HookInput, error) {
	var in HookInput
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return in, errors.New("no hook input on stdin")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&in); err != nil {
		return in, fmt.Errorf("hook input is not the JSON object expected: %s", clip(err.Error(), 200))
	}
	if dec.More() {
		return in, errors.New("hook input holds more than one JSON value")
	}
	// Codex may spell the event pre_tool_use.
	if ev := strings.ToLower(strings.ReplaceAll(in.HookEventName, "_", "")); ev != "" && ev != "pretooluse" {
		return in, fmt.Errorf("this hook answers PreToolUse only, not %q", clip(in.HookEventName, 100))
	}
	if strings.TrimSpace(in.ToolName) == "" {
		return in, errors.New("hook input names no tool (tool_name)")
	}
	ti := bytes.TrimSpace(in.ToolInput)
	if len(ti) == 0 || string(ti) == "null" {
		in.ToolInput = json.RawMessage("{}")
	} else if ti[0] != '{' {
		return in, errors.New("tool_input is not a JSON object")
	}
	return in, nil
}

// Checker decides whether a call may run: the gateway's POST /v1/check
// (httpapi.Client is one). The gateway decides, not the agent's machine.
type Checker interface {
	Check(ctx context.Context, ch permissions.Check) (*permissions.Result, error)
}

// Hook answers an agent's PreToolUse hook as a thin client of the
// gateway's /v1/check: the gateway's rules, grants, mode and classifier
// decide; a call that asks is put to people and waited for.
type Hook struct {
	// Checker is the gateway; nil denies everything that is not safe.
	Checker Checker
	// Gateway waits for a request's decision (the same client).
	Gateway Gateway
	// Classifier tells safe calls apart when the gateway cannot be
	// reached: those still run, everything else is denied.
	Classifier Classifier
	Persona    string
	// Agent names the agent in reasons: "Claude Code", "Codex".
	Agent string
	// DenyOnly answers deny or nothing at all (Codex: its PreToolUse
	// honours only deny; an allow or ask fails the hook, and the tool runs).
	DenyOnly bool
	// Timeout bounds the whole decision (0: DefaultHookTimeout). The
	// request asks the gateway to expire a little before it.
	Timeout time.Duration
	// Caution "ask" never allows a caution call itself, whatever the
	// persona says; by default the persona's caution setting decides.
	Caution string
	// Poll bounds one long-poll (0: DefaultPoll).
	Poll time.Duration
	// Log, when set, is told what the hook asked and what came of it
	// (the agent shows a hook's stderr only in its debug output).
	Log io.Writer
	// Verify checks an approval's receipt against the pinned gateway key;
	// nil allows nothing that needs approval.
	Verify Verifier
	// PinCheck checks the request's signed event when it is made.
	PinCheck PinCheck
}

// Run reads the hook input from stdin (at most MaxHookInput bytes),
// decides, and prints the decision on stdout. It never panics and every
// path prints a decision, except a call left to the agent's own rules,
// which prints nothing; the only error is failing to print.
func (h *Hook) Run(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	d := h.safely(func() HookDecision {
		if stdin == nil {
			return deny("no hook input on stdin")
		}
		b, err := io.ReadAll(io.LimitReader(stdin, MaxHookInput+1))
		if err != nil {
			return deny("reading the hook input: %v", err)
		}
		if len(b) > MaxHookInput {
			return deny("hook input is larger than %d bytes", MaxHookInput)
		}
		return h.Decide(ctx, b)
	})
	if d.Decision == "" || (h.DenyOnly && d.Decision != Deny) {
		h.logf("signoff: %s: no decision printed; the agent's own rules apply", strings.TrimPrefix(orText(d.Reason, "left to the agent"), "signoff: "))
		return nil
	}
	return WriteHookDecision(stdout, d)
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (h *Hook) safely(f func() HookDecision) (d HookDecision) {
	defer func() {
		if p := recover(); p != nil {
			d = deny("internal error (%v); not approved", p)
		}
	}()
	return f()
}

// Decide answers one hook input. An empty Decision means no decision:
// the agent's own rules and prompts apply (a caution call).
func (h *Hook) Decide(ctx context.Context, raw []byte) HookDecision {
	in, err := ParseHookInput(raw)
	if err != nil {
		return deny("%v; not allowed", err)
	}
	if h.Checker == nil {
		return h.unreachable(in, "no gateway is configured")
	}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultHookTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	n := h.request(in, timeout)
	ch := permissions.Check{
		Persona: h.Persona, Tool: in.ToolName, Input: in.ToolInput, Cwd: in.Cwd,
		Reason: n.Reason, Timeout: n.Timeout, Wait: true, Nonce: bot.NewNonce(),
	}
	res, err := h.Checker.Check(ctx, ch)
	if err != nil {
		h.logf("signoff: could not ask the gateway: %s", errorText(err))
		return h.unreachable(in, errorText(err))
	}
	what := "signoff: " + res.Why
	switch res.Decision {
	case permissions.Allow:
		if r := res.Request; r != nil {
			break // approved by people: the receipt is checked below
		}
		if ok, why := CheckAllowed(h.Verify, ch, res); !ok {
			// Not the pinned gateway's word: only what is safe here runs.
			if h.localLevel(in) == bot.Safe {
				return HookDecision{Decision: Allow, Reason: "signoff: safe"}
			}
			h.logf("signoff: %s", why)
			return deny("%s; not allowed", why)
		}
		if res.By == permissions.ByCaution && (res.Caution != Allow || h.Caution == Ask) {
			return HookDecision{Reason: what}
		}
		return HookDecision{Decision: Allow, Reason: what}
	case permissions.Deny:
		if r := res.Request; r != nil {
			return deny("%s (request %s). This %s call was not approved; do not try to reach the same result another way.", bot.Outcome(r), r.ID, clip(in.ToolName, 100))
		}
		return HookDecision{Decision: Deny, Reason: what + ". Do not try to reach the same result another way."}
	case permissions.Ask:
	default:
		return deny("the gateway answered %q; not allowed", clip(res.Decision, 40))
	}
	r := res.Request
	if r == nil || h.Gateway == nil {
		return deny("%s, and no request could be made; not approved", res.Why)
	}
	if err := CheckPin(h.PinCheck, h.Gateway, r); err != nil {
		h.logf("signoff: %s", errorText(err))
		return deny("%s; not approved", errorText(err))
	}
	asked, _ := permissions.Asked(ch)
	h.logf("signoff: asked persona %s (request %s): %s", r.Persona, r.ID, bot.Headline(r))
	r, err = h.await(ctx, r)
	if err != nil {
		h.logf("signoff: request %s: %s", r.ID, errorText(err))
		return deny("%s; request %s: %s; not approved", res.Why, r.ID, errorText(err))
	}
	h.logf("signoff: request %s: %s", r.ID, bot.Outcome(r))
	if ok, why := Approved(h.Verify, asked, r); ok {
		return HookDecision{Decision: Allow, Reason: "signoff: " + bot.Outcome(r) + " (request " + r.ID + ")"}
	} else if why != "" {
		h.logf("signoff: request %s: %s", r.ID, why)
		return deny("%s (request %s); not approved", why, r.ID)
	}
	return deny("%s (request %s). This %s call was not approved; do not try to reach the same result another way.", bot.Outcome(r), r.ID, clip(in.ToolName, 100))
}

// localLevel is this machine's classification of the call: used only to
// let a safe call run when the gateway's word cannot be had or believed.
func (h *Hook) localLevel(in HookInput) bot.Level {
	if h.Classifier == nil {
		return bot.Dangerous
	}
	return h.Classifier.ToolCall(in.ToolName, in.ToolInput, in.Cwd).Level
}

// unreachable decides without the gateway: a call the local classifier
// calls safe runs; anything else is denied (fail closed).
func (h *Hook) unreachable(in HookInput, why string) HookDecision {
	if h.Classifier != nil {
		if a := h.Classifier.ToolCall(in.ToolName, in.ToolInput, in.Cwd); a.Level == bot.Safe {
			return HookDecision{Decision: Allow, Reason: "signoff: safe (the gateway could not be asked: " + why + ")"}
		}
	}
	return deny("the gateway could not be asked (%s), and only safe calls run without it; not allowed", why)
}

// await waits for r's decision, showing its votes and countdown on the
// hook's stderr as they change.
func (h *Hook) await(ctx context.Context, r *bot.Request) (*bot.Request, error) {
	if h.Log == nil {
		return Await(ctx, h.Gateway, r, h.Poll, nil)
	}
	d := wait.New(h.Log, wait.IsTerminal(h.Log))
	d.Update(r)
	d.Start()
	defer d.Stop()
	return Await(ctx, h.Gateway, r, h.Poll, d.Update)
}

func (h *Hook) logf(format string, args ...any) {
	if h.Log != nil {
		fmt.Fprintf(h.Log, format+"\n", args...)
	}
}

// request is what the hook asks the gateway. A shell tool is asked as
// its command (what people read, classified as a command); any other
// tool as "Name {input}" with long strings cut (classified as that tool).
// record is what the audit log keeps of a caution call that ran without
// asking. A tool call is sent in the hook's own form, with its cwd, so the
// gateway classifies it against the same workspace the hook did.
func (h *Hook) record(in HookInput) bot.NewRequest {
	n := h.request(in, 0)
	if n.Kind != bot.KindTool {
		return n
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(in.ToolInput))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return n
	}
	b, err := json.Marshal(map[string]any{"tool_name": in.ToolName, "tool_input": elide(v, 0), "cwd": in.Cwd})
	if err == nil && len(b) <= bot.MaxActionLen {
		n.Action = string(b)
	}
	return n
}

func (h *Hook) request(in HookInput, timeout time.Duration) bot.NewRequest {
	n := bot.NewRequest{Persona: h.Persona, Kind: bot.KindTool, Action: ToolAction(in.ToolName, in.ToolInput)}
	if cmd, ok := shellCommand(in.ToolName, in.ToolInput); ok {
		n.Kind, n.Action = bot.KindCommand, cmd
	}
	n.Action = clip(n.Action, bot.MaxActionLen)

	who := h.Agent
	if who == "" {
		who = "the agent"
	}
	var fields struct {
		Description string `json:"description"`
	}
	_ = json.Unmarshal(in.ToolInput, &fields)
	reason := who + " wants to use " + in.ToolName
	if d := strings.TrimSpace(fields.Description); d != "" {
		reason = who + ": " + d
	}
	var ctxParts []string
	if in.Cwd != "" {
		ctxParts = append(ctxParts, "in "+in.Cwd)
	}
	if in.SessionID != "" {
		ctxParts = append(ctxParts, "session "+clip(in.SessionID, 40))
	}
	if len(ctxParts) > 0 {
		reason += " (" + strings.Join(ctxParts, ", ") + ")"
	}
	n.Reason = clip(reason, bot.MaxReasonLen)

	// Expire a little before the hook gives up, so the answer it reads
	// is the gateway's, not its own timeout.
	n.Timeout = bot.Duration(timeout - min(15*time.Second, timeout/4))
	return n
}

// shellTools are the tools whose input is a shell command.
var shellTools = map[string]bool{"Bash": true, "bash": true, "shell": true}

func shellCommand(tool string, input json.RawMessage) (string, bool) {
	if !shellTools[tool] {
		return "", false
	}
	var f struct {
		Command *string `json:"command"`
	}
	if json.Unmarshal(input, &f) != nil || f.Command == nil || strings.TrimSpace(*f.Command) == "" {
		return "", false
	}
	return *f.Command, true
}

// maxShownString is the longest string value ToolAction keeps whole.
const maxShownString = 2048

// ToolAction writes a tool call as the gateway reads a tool action:
// "Name {json input}", with string values longer than 2 KiB (a file's
// new content) replaced by their size.
func ToolAction(tool string, input json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return tool + " " + string(input)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(elide(v, 0)); err != nil {
		return tool + " " + string(input)
	}
	return tool + " " + strings.TrimSpace(b.String())
}

func elide(v any, depth int) any {
	if depth > 64 {
		return "…(nested too deep)"
	}
	switch x := v.(type) {
	case string:
		if len(x) > maxShownString {
			return fmt.Sprintf("…(%d bytes)", len(x))
		}
	case map[string]any:
		for k, e := range x {
			x[k] = elide(e, depth+1)
		}
	case []any:
		for i, e := range x {
			x[i] = elide(e, depth+1)
		}
	}
	return v
}
