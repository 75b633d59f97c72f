package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/agent"
	"github.com/signoff/signoff/bot/risk"
)

// hookJSON is a PreToolUse payload as Claude Code writes it.
func hookJSON(tool string, input any) string {
	b, _ := json.Marshal(map[string]any{
		"session_id":      "abc123",
		"transcript_path": "/home/u/.claude/projects/p/abc123.jsonl",
		"cwd":             "/home/u/proj",
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

func TestHookDecisions(t *testing.T) {
	approve := &fakeGateway{status: bot.Approved}
	for _, tc := range []struct {
		name     string
		gw       agent.Gateway // nil: no gateway
		caution  string
		stdin    string
		want     string
		reason   string // in the reason
		askedFor string // the action the gateway was asked about ("" = not asked)
	}{
		{"safe read in the workspace", approve, "", hookJSON("Read", map[string]any{"file_path": "/home/u/proj/main.go"}), agent.Allow, "safe", ""},
		{"safe bash", approve, "", hookJSON("Bash", map[string]any{"command": "git status"}), agent.Allow, "safe", ""},
		{"caution edit runs", approve, "", hookJSON("Edit", map[string]any{"file_path": "/home/u/proj/main.go", "old_string": "a", "new_string": "b"}), agent.Allow, "caution", ""},
		{"caution edit asks when told", approve, agent.Ask, hookJSON("Edit", map[string]any{"file_path": "/home/u/proj/main.go"}), agent.Ask, "caution", ""},
		{"dangerous bash approved", approve, "", hookJSON("Bash", map[string]any{"command": "rm -rf /", "description": "wipe"}), agent.Allow, "approved by alice", "rm -rf /"},
		{"dangerous read denied", &fakeGateway{status: bot.Denied}, "", hookJSON("Read", map[string]any{"file_path": "/home/u/.ssh/id_ed25519"}), agent.Deny, "denied by carol", `Read {"file_path":"/home/u/.ssh/id_ed25519"}`},
		{"dangerous expired", &fakeGateway{status: bot.Expired}, "", hookJSON("Bash", map[string]any{"command": "sudo reboot"}), agent.Deny, "silence is not consent", "sudo reboot"},
		{"gateway unreachable", &fakeGateway{submitErr: bot.Errorf(bot.EUnavailable, "cannot reach the gateway at http://127.0.0.1:1")}, "", hookJSON("Bash", map[string]any{"command": "terraform apply"}), agent.Deny, "cannot reach the gateway", "terraform apply"},
		{"lost while waiting", &fakeGateway{waitErr: errors.New("connection reset")}, "", hookJSON("Bash", map[string]any{"command": "npm publish"}), agent.Deny, "connection reset", "npm publish"},
		{"no gateway", nil, "", hookJSON("Bash", map[string]any{"command": "rm -rf ~"}), agent.Deny, "no gateway", ""},
		{"malformed JSON", approve, "", `{"tool_name": "Bash", "tool_input": {"command": "ls"`, agent.Deny, "not the JSON object expected", ""},
		{"empty stdin", approve, "", "", agent.Deny, "no hook input", ""},
		{"not an object", approve, "", `["Bash"]`, agent.Deny, "not the JSON object expected", ""},
		{"two values", approve, "", hookJSON("Read", map[string]any{"file_path": "a"}) + hookJSON("Read", map[string]any{"file_path": "b"}), agent.Deny, "more than one", ""},
		{"no tool", approve, "", `{"hook_event_name":"PreToolUse","tool_input":{}}`, agent.Deny, "names no tool", ""},
		{"tool_input not an object", approve, "", `{"tool_name":"Bash","tool_input":"rm -rf /"}`, agent.Deny, "not a JSON object", ""},
		{"codex event spelling", approve, "", `{"hook_event_name":"pre_tool_use","tool_name":"Bash","tool_input":{"command":"ls"}}`, agent.Allow, "safe", ""},
		{"other event", approve, "", `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`, agent.Deny, "PreToolUse only", ""},
		{"unknown tool asks", approve, "", hookJSON("mcp__notes__add", map[string]any{"text": "hi"}), agent.Allow, "approved by", `mcp__notes__add {"text":"hi"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &agent.Hook{Classifier: risk.Default(), Persona: "demo", Agent: "Claude Code", Caution: tc.caution, Timeout: 5 * time.Second}
			var fg *fakeGateway
			if tc.gw != nil {
				fg = tc.gw.(*fakeGateway)
				fg.asked = nil
				h.Gateway, h.Verify = fg, fg.verify
			}
			got := runHook(t, h, strings.NewReader(tc.stdin))
			if got.PermissionDecision != tc.want || !strings.Contains(got.PermissionDecisionReason, tc.reason) {
				t.Errorf("got %s %q, want %s with %q", got.PermissionDecision, got.PermissionDecisionReason, tc.want, tc.reason)
			}
			if fg == nil {
				return
			}
			asked := fg.requests()
			switch {
			case tc.askedFor == "":
				if len(asked) != 0 {
					t.Errorf("asked the gateway %+v, want not asked", asked)
				}
			case tc.askedFor != "":
				if len(asked) != 1 || asked[0].Action != tc.askedFor || asked[0].Persona != "demo" {
					t.Fatalf("asked %+v, want one request for %q", asked, tc.askedFor)
				}
				if !strings.Contains(asked[0].Reason, "Claude Code") || !strings.Contains(asked[0].Reason, "/home/u/proj") {
					t.Errorf("reason %q names neither the agent nor the workspace", asked[0].Reason)
				}
				if d := time.Duration(asked[0].Timeout); d <= 0 || d >= 5*time.Second {
					t.Errorf("request timeout %v, want below the hook's 5s", d)
				}
			}
		})
	}
}

func TestHookHugeStdin(t *testing.T) {
	h := &agent.Hook{Classifier: risk.Default(), Persona: "demo", Gateway: &fakeGateway{status: bot.Approved}}
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
	h := &agent.Hook{Classifier: panicky{}, Gateway: &fakeGateway{status: bot.Approved}}
	got := runHook(t, h, strings.NewReader(hookJSON("Read", map[string]any{"file_path": "a"})))
	if got.PermissionDecision != agent.Deny || !strings.Contains(got.PermissionDecisionReason, "internal error") {
		t.Fatalf("got %+v, want deny: internal error", got)
	}
}

func TestHookTimeoutIsDeny(t *testing.T) {
	l := newLive(t, time.Minute) // nobody answers
	h := &agent.Hook{Classifier: risk.Default(), Gateway: l.client, Persona: "demo", Timeout: 300 * time.Millisecond}
	start := time.Now()
	got := runHook(t, h, strings.NewReader(hookJSON("Bash", map[string]any{"command": "git reset --hard HEAD~3"})))
	if got.PermissionDecision != agent.Deny || time.Since(start) > 5*time.Second {
		t.Fatalf("got %+v after %v, want deny soon", got, time.Since(start))
	}
}

func TestHookWriteElidesContent(t *testing.T) {
	fg := &fakeGateway{status: bot.Denied}
	h := &agent.Hook{Classifier: risk.Default(), Gateway: fg, Persona: "demo", Agent: "Codex"}
	content := strings.Repeat("line\n", 2000)
	runHook(t, h, strings.NewReader(hookJSON("Write", map[string]any{"file_path": "/etc/hosts", "content": content})))
	asked := fg.requests()
	if len(asked) != 1 {
		t.Fatalf("asked %d times, want 1", len(asked))
	}
	want := `Write {"content":"…(10000 bytes)","file_path":"/etc/hosts"}`
	if asked[0].Kind != bot.KindTool || asked[0].Action != want {
		t.Errorf("asked %s %q, want tool %q", asked[0].Kind, asked[0].Action, want)
	}
	// The gateway classifies the action it is sent as the hook did.
	if a := risk.Default().Classify(bot.KindTool, asked[0].Action); a.Level != bot.Dangerous {
		t.Errorf("gateway would classify %q as %s", asked[0].Action, a.Level)
	}
	if !strings.HasPrefix(asked[0].Reason, "Codex wants to use Write") {
		t.Errorf("reason %q", asked[0].Reason)
	}
}

// TestHookLiveGateway runs the hook against a real gateway over HTTP, a
// person answering by a signed reaction.
func TestHookLiveGateway(t *testing.T) {
	for _, tc := range []struct {
		react, want, reason string
	}{
		{"✅", agent.Allow, "approved by alice"},
		{"❌", agent.Deny, "denied by alice"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			l := newLive(t, time.Minute)
			h := &agent.Hook{Classifier: risk.Default(), Gateway: l.client, Persona: "demo", Agent: "Claude Code", Poll: time.Second, Verify: l.verify}
			answered := l.answer(t, tc.react)
			got := runHook(t, h, strings.NewReader(hookJSON("Bash", map[string]any{"command": "git push --force origin main"})))
			r := <-answered
			if r == nil {
				t.Fatal("no request reached the gateway")
			}
			if r.Action != "git push --force origin main" || r.Kind != bot.KindCommand || r.Level != bot.Dangerous {
				t.Errorf("request = %s %q %s, want the command, dangerous", r.Kind, r.Action, r.Level)
			}
			if got.PermissionDecision != tc.want || !strings.Contains(got.PermissionDecisionReason, tc.reason) || !strings.Contains(got.PermissionDecisionReason, r.ID) {
				t.Errorf("got %+v, want %s with %q and the request id", got, tc.want, tc.reason)
			}
		})
	}
}
