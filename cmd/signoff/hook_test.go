package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func hookInput(tool string, input map[string]any) string {
	b, _ := json.Marshal(map[string]any{
		"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": "/home/u/proj",
		"permission_mode": "default", "hook_event_name": "PreToolUse",
		"tool_name": tool, "tool_input": input, "tool_use_id": "toolu_1",
	})
	return string(b)
}

// decision parses the hook's stdout, failing unless it is exactly one
// PreToolUse decision.
func decision(t *testing.T, out string) (string, string) {
	t.Helper()
	var o struct {
		HookSpecificOutput struct {
			HookEventName            string `json:"hookEventName"`
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&o); err != nil || dec.More() || o.HookSpecificOutput.HookEventName != "PreToolUse" {
		t.Fatalf("hook stdout %q is not one PreToolUse decision (%v)", out, err)
	}
	return o.HookSpecificOutput.PermissionDecision, o.HookSpecificOutput.PermissionDecisionReason
}

// TestHook runs `signoff hook claude-code` against the real serve; every
// case exits 0 with a decision on stdout.
func TestHook(t *testing.T) {
	gateway(t, demoPersona)
	danger := hookInput("Bash", map[string]any{"command": "git push --force origin main", "description": "Force-push the rebase"})
	for _, tc := range []struct {
		name   string
		args   []string
		stdin  string
		answer string // approve or deny the request it makes
		url    string // overrides SIGNOFF_URL
		want   string
		reason string // in the reason; alternatives split by |
	}{
		{"safe read in the workspace", nil, hookInput("Read", map[string]any{"file_path": "/home/u/proj/go.mod"}), "", "", "allow", "safe"},
		{"caution edit: no decision, the agent's own rules apply", nil, hookInput("Edit", map[string]any{"file_path": "/home/u/proj/main.go"}), "", "", "", ""},
		{"caution edit, --caution ask", []string{"--caution", "ask"}, hookInput("Edit", map[string]any{"file_path": "/home/u/proj/main.go"}), "", "", "", ""},
		{"dangerous, approved", nil, danger, "approve", "", "allow", "approved by alice"},
		{"dangerous, denied", nil, danger, "deny", "", "deny", "denied by alice"},
		{"dangerous, expires", []string{"--timeout", "400ms"}, danger, "", "", "deny", "⌛ expired|no decision in the time"},
		{"codex alias", nil, hookInput("Read", map[string]any{"file_path": "/home/u/.aws/credentials"}), "deny", "", "deny", "denied by alice"},
		{"gateway unreachable", nil, danger, "", "http://127.0.0.1:1", "deny", "cannot reach the gateway"},
		{"gateway unreachable, safe runs", nil, hookInput("Bash", map[string]any{"command": "ls"}), "", "http://127.0.0.1:1", "allow", "could not be asked"},
		{"malformed JSON", nil, `{"tool_name":"Bash",`, "", "", "deny", "not the JSON object expected"},
		{"huge stdin", nil, `{"tool_name":"Write","tool_input":{"content":"` + strings.Repeat("x", 9<<20) + `"}}`, "", "", "deny", "larger than"},
		{"unknown persona", []string{"--persona", "nope"}, danger, "", "", "deny", `unknown persona "nope"`},
		{"bad flag", []string{"--frob"}, danger, "", "", "deny", "bad flags"},
		{"bad --caution", []string{"--caution", "yes"}, danger, "", "", "deny", "--caution"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.url != "" {
				t.Setenv("SIGNOFF_URL", tc.url)
			} else {
				defer awaitNonePending(t)
			}
			agentName := "claude-code"
			if tc.name == "codex alias" {
				agentName = "codex"
			}
			done := background(strings.NewReader(tc.stdin), append([]string{"hook", agentName}, tc.args...)...)
			if tc.answer != "" {
				r := awaitPending(t)
				if c, out, errs := cli(tc.answer, r.ID); c != 0 {
					t.Fatalf("%s = %d %q %q", tc.answer, c, out, errs)
				}
			}
			res := finished(t, done)
			if res.code != 0 {
				t.Fatalf("hook exited %d (%q); a hook must exit 0", res.code, res.err)
			}
			if tc.want == "" {
				if res.stdout != "" {
					t.Errorf("printed %q, want no decision at all", res.stdout)
				}
				return
			}
			got, reason := decision(t, res.stdout)
			found := false
			for _, alt := range strings.Split(tc.reason, "|") {
				found = found || strings.Contains(reason, alt)
			}
			if got != tc.want || !found {
				t.Errorf("got %s %q, want %s with %q", got, reason, tc.want, tc.reason)
			}
		})
	}
}

func TestHookUsage(t *testing.T) {
	for _, args := range [][]string{{"hook"}, {"hook", "cursor"}} {
		if code, out, errs := cli(args...); code != 2 || out != "" || !strings.Contains(errs, "usage: signoff hook claude-code|codex") {
			t.Errorf("%v = %d %q %q, want 2 and usage", args, code, out, errs)
		}
	}
}
