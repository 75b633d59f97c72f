package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/agent"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/permissions"
	"github.com/signoff/signoff/bot/risk"
)

// hookCwd is the workspace of the hook payloads.
const hookCwd = "/home/u/proj"

// hookJSON is a PreToolUse payload as Claude Code writes it.
func hookJSON(tool string, input any) string {
	b, _ := json.Marshal(map[string]any{
		"session_id":      "abc123",
		"transcript_path": "/home/u/.claude/projects/p/abc123.jsonl",
		"cwd":             hookCwd,
		"permission_mode": "default",
		"hook_event_name": "PreToolUse",
		"tool_name":       tool,
		"tool_input":      input,
		"tool_use_id":     "toolu_01",
	})
	return string(b)
}

// runHook runs h on stdin and returns the parsed output, failing the
// test unless it is exactly one valid decision.
func runHook(t *testing.T, h *agent.Hook, stdin io.Reader) agent.HookSpecificOutput {
	t.Helper()
	var out bytes.Buffer
	if err := h.Run(context.Background(), stdin, &out); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return parseHookOutput(t, out.Bytes())
}

func parseHookOutput(t testing.TB, b []byte) agent.HookSpecificOutput {
	t.Helper()
	var o struct {
		HookSpecificOutput *agent.HookSpecificOutput `json:"hookSpecificOutput"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil || dec.More() || o.HookSpecificOutput == nil {
		t.Fatalf("hook output %q is not one hook JSON object (%v)", b, err)
	}
	s := *o.HookSpecificOutput
	if s.HookEventName != "PreToolUse" {
		t.Fatalf("hookEventName = %q", s.HookEventName)
	}
	switch s.PermissionDecision {
	case agent.Allow, agent.Deny, agent.Ask:
	default:
		t.Fatalf("permissionDecision = %q", s.PermissionDecision)
	}
	if s.PermissionDecisionReason == "" {
		t.Fatalf("no permissionDecisionReason in %s", b)
	}
	return s
}

// schema loads one of the agents' real hook output schemas.
func schema(t testing.TB, file string) *jsonschema.Resolved {
	t.Helper()
	b, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// hookOutcome runs the hook and returns what it printed: "" when nothing
// (no decision), else the decision, after checking the output against the
// agent's own schema.
func hookOutcome(t *testing.T, h *agent.Hook, stdin string) (decision, reason string) {
	t.Helper()
	var out bytes.Buffer
	if err := h.Run(context.Background(), strings.NewReader(stdin), &out); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if out.Len() == 0 {
		return "", ""
	}
	file := "claude-code-pretooluse-output.schema.json"
	if h.DenyOnly {
		file = "codex-pretooluse-output.schema.json"
	}
	var v any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("hook output %q is not JSON: %v", out.String(), err)
	}
	if err := schema(t, file).Validate(v); err != nil {
		t.Fatalf("hook output %s does not match %s: %v", out.String(), file, err)
	}
	got := parseHookOutput(t, out.Bytes())
	return got.PermissionDecision, got.PermissionDecisionReason
}

var (
	denyPush = bot.Rule{Tool: "bash", Pattern: "git push *", Effect: bot.EffectDeny}
	askCat   = bot.Rule{Tool: "bash", Pattern: "cat *", Effect: bot.EffectAsk}
)

// TestHookDecisions: each kind of decision, through a real gateway over
// HTTP, as Claude Code and as Codex print it, each output checked against
// that agent's schema. Codex gets deny or nothing at all.
func TestHookDecisions(t *testing.T) {
	read := hookJSON("Read", map[string]any{"file_path": hookCwd + "/main.go"})
	safeBash := hookJSON("Bash", map[string]any{"command": "git status"})
	edit := hookJSON("Edit", map[string]any{"file_path": hookCwd + "/main.go", "old_string": "a", "new_string": "b"})
	danger := hookJSON("Bash", map[string]any{"command": "git push --force origin main", "description": "rewrite history"})
	push := hookJSON("Bash", map[string]any{"command": "git push origin main"})
	cat := hookJSON("Bash", map[string]any{"command": "cat README.md"})
	patch := hookJSON("apply_patch", map[string]any{"command": "*** Begin Patch\n*** Update File: /etc/hosts\n*** End Patch\n"})
	for _, tc := range []struct {
		name         string
		rules        []bot.Rule
		caution      string // the persona's
		flag         string // the hook's --caution
		stdin, react string
		claude       string // decision printed for Claude Code ("" = none)
		codex        string
		reason       string
	}{
		{name: "safe read", stdin: read, claude: agent.Allow, codex: "", reason: "safe"},
		{name: "safe bash", stdin: safeBash, claude: agent.Allow, codex: "", reason: "safe"},
		{name: "caution edit: no decision", stdin: edit, claude: "", codex: ""},
		{name: "caution edit, persona caution: allow", caution: "allow", stdin: edit, claude: agent.Allow, codex: "", reason: "caution"},
		{name: "caution, persona allow, hook --caution ask", caution: "allow", flag: agent.Ask, stdin: edit, claude: "", codex: ""},
		{name: "dangerous approved", stdin: danger, react: "✅", claude: agent.Allow, codex: "", reason: "approved by alice"},
		{name: "dangerous denied", stdin: danger, react: "❌", claude: agent.Deny, codex: agent.Deny, reason: "denied by alice"},
		{name: "deny rule: at once", rules: []bot.Rule{denyPush}, stdin: push, claude: agent.Deny, codex: agent.Deny, reason: `"git push *" → deny`},
		{name: "ask rule on a safe call waits for people", rules: []bot.Rule{askCat}, stdin: cat, react: "✅", claude: agent.Allow, codex: "", reason: "approved by alice"},
		{name: "apply_patch outside the workspace asks", stdin: patch, react: "❌", claude: agent.Deny, codex: agent.Deny, reason: "denied by alice"},
		{name: "malformed", stdin: `{"tool_name": "Bash"`, claude: agent.Deny, codex: agent.Deny, reason: "not the JSON object expected"},
		{name: "other event", stdin: `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`, claude: agent.Deny, codex: agent.Deny, reason: "PreToolUse only"},
	} {
		for _, who := range []string{"Claude Code", "Codex"} {
			t.Run(tc.name+"/"+who, func(t *testing.T) {
				l := newLive(t, time.Minute, func(p *bot.Persona) { p.Permissions, p.Caution = tc.rules, tc.caution })
				h := &agent.Hook{Checker: l.client, Gateway: l.client, Classifier: risk.Default(), Persona: "demo", Agent: who,
					DenyOnly: who == "Codex", Caution: tc.flag, Timeout: 10 * time.Second, Poll: time.Second, Verify: l.verify}
				var answered <-chan *bot.Request
				if tc.react != "" {
					answered = l.answer(t, tc.react)
				}
				got, reason := hookOutcome(t, h, tc.stdin)
				want := tc.claude
				if who == "Codex" {
					want = tc.codex
				}
				if got != want || (want != "" && !strings.Contains(reason, tc.reason)) {
					t.Errorf("printed %q %q, want %q with %q", got, reason, want, tc.reason)
				}
				if answered != nil {
					if r := <-answered; r == nil {
						t.Fatal("no request reached the people")
					}
				} else if rs, _ := l.env.Gateway.List(context.Background(), bot.Filter{}); len(rs) != 0 {
					t.Errorf("a request was made (%s), want none", rs[0].Action)
				}
			})
		}
	}
}

// TestHookGatewayUnreachable: without the gateway only a safe call runs.
func TestHookGatewayUnreachable(t *testing.T) {
	client := httpapi.NewClient("http://127.0.0.1:1")
	for _, tc := range []struct {
		name, stdin, claude, codex string
	}{
		{"safe runs", hookJSON("Bash", map[string]any{"command": "ls"}), agent.Allow, ""},
		{"caution is denied", hookJSON("Edit", map[string]any{"file_path": hookCwd + "/a.go"}), agent.Deny, agent.Deny},
		{"dangerous is denied", hookJSON("Bash", map[string]any{"command": "terraform apply"}), agent.Deny, agent.Deny},
	} {
		for _, who := range []string{"Claude Code", "Codex"} {
			t.Run(tc.name+"/"+who, func(t *testing.T) {
				h := &agent.Hook{Checker: client, Gateway: client, Classifier: risk.Default(), Persona: "demo", Agent: who, DenyOnly: who == "Codex", Timeout: 5 * time.Second}
				got, reason := hookOutcome(t, h, tc.stdin)
				want := tc.claude
				if who == "Codex" {
					want = tc.codex
				}
				if got != want {
					t.Errorf("printed %q (%s), want %q", got, reason, want)
				}
				if got == agent.Deny && !strings.Contains(reason, "could not be asked") {
					t.Errorf("reason %q does not say the gateway could not be asked", reason)
				}
			})
		}
	}
}

func TestHookHugeStdin(t *testing.T) {
	h := &agent.Hook{Classifier: risk.Default(), Persona: "demo"}
	big := `{"tool_name":"Write","tool_input":{"file_path":"a","content":"` + strings.Repeat("x", agent.MaxHookInput) + `"}}`
	got := runHook(t, h, strings.NewReader(big))
	if got.PermissionDecision != agent.Deny || !strings.Contains(got.PermissionDecisionReason, "larger than") {
		t.Fatalf("got %+v, want deny: larger than", got)
	}
}

type panicky struct{}

func (panicky) Command(string) bot.Assessment { panic("boom") }
func (panicky) ToolCall(string, json.RawMessage, string) bot.Assessment {
	panic("boom")
}

func TestHookPanicIsDeny(t *testing.T) {
	h := &agent.Hook{Classifier: panicky{}}
	got := runHook(t, h, strings.NewReader(hookJSON("Read", map[string]any{"file_path": "a"})))
	if got.PermissionDecision != agent.Deny || !strings.Contains(got.PermissionDecisionReason, "internal error") {
		t.Fatalf("got %+v, want deny: internal error", got)
	}
}

func TestHookTimeoutIsDeny(t *testing.T) {
	l := newLive(t, time.Minute) // nobody answers
	h := &agent.Hook{Classifier: risk.Default(), Checker: l.client, Gateway: l.client, Persona: "demo", Timeout: 1500 * time.Millisecond, Verify: l.verify}
	start := time.Now()
	got := runHook(t, h, strings.NewReader(hookJSON("Bash", map[string]any{"command": "git reset --hard HEAD~3"})))
	if got.PermissionDecision != agent.Deny || time.Since(start) > 8*time.Second {
		t.Fatalf("got %+v after %v, want deny soon", got, time.Since(start))
	}
}

// TestHookSendsCwdAndTool: the gateway is sent the tool and its workspace,
// so workspace rules and grants apply; people read a shell tool's command.
func TestHookSendsCwdAndTool(t *testing.T) {
	l := newLive(t, time.Minute, func(p *bot.Persona) {
		p.Workspaces = []bot.Workspace{{Glob: hookCwd + "/**", Rules: []bot.Rule{{Tool: "bash", Pattern: "git push *", Effect: bot.EffectDeny}}}}
	})
	h := &agent.Hook{Checker: l.client, Gateway: l.client, Classifier: risk.Default(), Persona: "demo", Agent: "Claude Code", Timeout: 10 * time.Second, Poll: time.Second, Verify: l.verify}
	if got, reason := hookOutcome(t, h, hookJSON("Bash", map[string]any{"command": "git push origin main"})); got != agent.Deny || !strings.Contains(reason, "deny") {
		t.Errorf("workspace deny rule: %q %q", got, reason)
	}
	answered := l.answer(t, "❌")
	got, reason := hookOutcome(t, h, hookJSON("Write", map[string]any{"file_path": "/etc/hosts", "content": strings.Repeat("line\n", 600)}))
	r := <-answered
	t.Logf("write: %q %q", got, reason)
	if r == nil {
		t.Fatal("no request")
	}
	if r.Kind != bot.KindTool || !strings.Contains(r.Action, `"tool_name":"Write"`) || !strings.Contains(r.Action, hookCwd) || r.Level != bot.Dangerous {
		t.Errorf("request %s %q %s", r.Kind, r.Action, r.Level)
	}
	if !strings.Contains(r.Reason, "Claude Code") {
		t.Errorf("reason %q", r.Reason)
	}
}

// TestFakeGatewayAllowIsNotBelieved: whatever answers at SIGNOFF_URL says
// "allow" (by a rule, a grant) for a dangerous call, with no receipt from
// the pinned key, or with the real gateway's receipt for another call: the
// hook denies. A safe call still runs.
func TestFakeGatewayAllowIsNotBelieved(t *testing.T) {
	l := newLive(t, time.Minute, func(p *bot.Persona) {
		p.Permissions = []bot.Rule{{Tool: "bash", Pattern: "terraform apply -target=x", Effect: bot.EffectAllow}}
	})
	// A real receipt, for an exact allow of another command.
	real, err := l.client.Check(context.Background(), permissions.Check{Persona: "demo", Action: "terraform apply -target=x", Cwd: hookCwd, Nonce: bot.NewNonce()})
	if err != nil || real.Decision != "allow" || len(real.Receipt) == 0 {
		t.Fatalf("real allow: %+v %v", real, err)
	}
	for _, tc := range []struct {
		name string
		body any
	}{
		{"no receipt", map[string]any{"decision": "allow", "by": "allow-rule", "why": "trust me", "level": "dangerous", "mode": "ask"}},
		{"a receipt for another call", map[string]any{"decision": "allow", "by": "allow-rule", "why": "trust me", "level": "dangerous", "mode": "ask", "receipt": real.Receipt, "receipt_id": real.ReceiptID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(tc.body)
			}))
			defer fake.Close()
			client := httpapi.NewClient(fake.URL)
			h := &agent.Hook{Checker: client, Gateway: client, Classifier: risk.Default(), Persona: "demo", Agent: "Claude Code", Timeout: 5 * time.Second, Verify: l.verify}
			if got, reason := hookOutcome(t, h, hookJSON("Bash", map[string]any{"command": "terraform apply -auto-approve"})); got != agent.Deny || !strings.Contains(reason, "not believed") {
				t.Errorf("dangerous call on a fake allow: %q %q, want deny: not believed", got, reason)
			}
			if got, _ := hookOutcome(t, h, hookJSON("Bash", map[string]any{"command": "ls"})); got != agent.Allow {
				t.Errorf("safe call: %q, want allow", got)
			}
		})
	}
	// The real gateway's exact allow is believed.
	h := &agent.Hook{Checker: l.client, Gateway: l.client, Classifier: risk.Default(), Persona: "demo", Agent: "Claude Code", Timeout: 5 * time.Second, Verify: l.verify}
	if got, reason := hookOutcome(t, h, hookJSON("Bash", map[string]any{"command": "terraform apply -target=x"})); got != agent.Allow {
		t.Errorf("exact allow rule through the real gateway: %q %q, want allow", got, reason)
	}
}

// TestHookLogSaysSignoffOnce: the line a caution call leaves on the hook's
// stderr starts "signoff: " once, not "signoff: signoff: caution".
func TestHookLogSaysSignoffOnce(t *testing.T) {
	l := newLive(t, time.Minute)
	var log strings.Builder
	h := &agent.Hook{Checker: l.client, Gateway: l.client, Classifier: risk.Default(), Persona: "demo", Agent: "Codex",
		DenyOnly: true, Timeout: 10 * time.Second, Poll: time.Second, Verify: l.verify, Log: &log}
	hookOutcome(t, h, hookJSON("Edit", map[string]any{"file_path": hookCwd + "/a.go"}))
	if got := log.String(); !strings.HasPrefix(got, "signoff: ") || strings.Contains(got, "signoff: signoff:") {
		t.Errorf("hook log = %q", got)
	}
}
