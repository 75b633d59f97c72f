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
// must stay below the hook timeout in the agent's settings (600s in the
// README): an agent that kills a hook lets the tool run.
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

// Hook answers an agent's PreToolUse hook: safe calls are allowed,
// caution calls get the Caution decision, dangerous calls are put to the
// persona's people through the gateway and allowed only when approved.
type Hook struct {
	Classifier Classifier
	// Gateway asks people; nil denies every dangerous call.
	Gateway Gateway
	Persona string
	// Agent names the agent in reasons: "Claude Code", "Codex".
	Agent string
	// Timeout bounds the whole decision (0: DefaultHookTimeout). The
	// request asks the gateway to expire a little before it.
	Timeout time.Duration
	// Caution is the decision for caution calls: Allow (the default:
	// they run, DESIGN 1.4) or Ask (Claude Code's own prompt decides).
	Caution string
	// Poll bounds one long-poll (0: DefaultPoll).
	Poll time.Duration
	// Log, when set, is told what the hook asked and what came of it
	// (the agent shows a hook's stderr only in its debug output).
	Log io.Writer
	// Verify checks an approval's receipt against the pinned gateway key;
	// nil allows nothing that needs approval.
	Verify Verifier
}

// Run reads the hook input from stdin (at most MaxHookInput bytes),
// decides, and prints the decision on stdout. It never panics and every
// path prints a decision; the only error is failing to print it.
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
	return WriteHookDecision(stdout, d)
}

func (h *Hook) safely(f func() HookDecision) (d HookDecision) {
	defer func() {
		if p := recover(); p != nil {
			d = deny("internal error (%v); not approved", p)
		}
	}()
	return f()
}

// Decide answers one hook input.
func (h *Hook) Decide(ctx context.Context, raw []byte) HookDecision {
	in, err := ParseHookInput(raw)
	if err != nil {
		return deny("%v; not allowed", err)
	}
	if h.Classifier == nil {
		return deny("no classifier; not allowed")
	}
	a := h.Classifier.ToolCall(in.ToolName, in.ToolInput, in.Cwd)
	if a.Level == bot.Caution && h.Caution != Ask {
		// Runs without asking, logged to the gateway's audit when it is
		// reachable; a gateway whose rules call it dangerous makes it ask.
		logged, insist := LogCaution(ctx, h.Gateway, h.record(in))
		switch {
		case insist != nil:
			a = *insist
		case logged:
			return HookDecision{Decision: Allow, Reason: "signoff: " + reasonsText(a) + "; runs without asking (logged)"}
		default:
			return HookDecision{Decision: Allow, Reason: "signoff: " + reasonsText(a) + "; runs without asking"}
		}
	}
	switch {
	case a.Level == bot.Safe:
		return HookDecision{Decision: Allow, Reason: "signoff: safe"}
	case a.Level == bot.Caution:
		return HookDecision{Decision: Ask, Reason: "signoff: " + reasonsText(a)}
	case !MustAsk(a.Level):
		return deny("unexpected risk level %q; not allowed", a.Level)
	}
	if h.Gateway == nil {
		return deny("%s; no gateway to ask, so not allowed", reasonsText(a))
	}

	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultHookTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	n := h.request(in, timeout)
	n.Nonce = bot.NewNonce()
	r, err := Submit(ctx, h.Gateway, n)
	if err != nil {
		h.logf("signoff: could not ask the gateway: %s", errorText(err))
		return deny("%s, and the gateway could not be asked (%s); not approved", reasonsText(a), errorText(err))
	}
	h.logf("signoff: asked persona %s (request %s): %s", r.Persona, r.ID, bot.Headline(r))
	r, err = h.await(ctx, r)
	if err != nil {
		h.logf("signoff: request %s: %s", r.ID, errorText(err))
		return deny("%s; request %s: %s; not approved", reasonsText(a), r.ID, errorText(err))
	}
	h.logf("signoff: request %s: %s", r.ID, bot.Outcome(r))
	if ok, why := Approved(h.Verify, n, r); ok {
		return HookDecision{Decision: Allow, Reason: "signoff: " + bot.Outcome(r) + " (request " + r.ID + ")"}
	} else if why != "" {
		h.logf("signoff: request %s: %s", r.ID, why)
		return deny("%s (request %s); not approved", why, r.ID)
	}
	return deny("%s (request %s). This %s call was not approved; do not try to reach the same result another way.", bot.Outcome(r), r.ID, clip(in.ToolName, 100))
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
