package agent_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/agent"
	"github.com/signoff/signoff/bot/risk"
)

// FuzzHook: whatever arrives on stdin, the hook prints exactly one valid
// decision and never panics; malformed input is never allowed.
func FuzzHook(f *testing.F) {
	for _, s := range []string{
		hookJSON("Bash", map[string]any{"command": "rm -rf /"}),
		hookJSON("Read", map[string]any{"file_path": "README.md"}),
		hookJSON("Write", map[string]any{"file_path": "/etc/passwd", "content": "x"}),
		hookJSON("Bash", map[string]any{"command": []string{"rm", "-rf", "/"}}),
		`{"tool_name":"Bash","tool_input":{"command":"echo $("}}`,
		`{"tool_name":"Bash","tool_input":null}`,
		`{"tool_name":"Edit","tool_input":{"file_path":7}}`,
		`{"tool_name":"","tool_input":{}}`,
		`{"hook_event_name":"Stop"}`,
		`[]`, `null`, `{`, ``, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	c := risk.Default()
	f.Fuzz(func(t *testing.T, in []byte) {
		// No gateway: only a safe call may be allowed, malformed input never.
		h := &agent.Hook{Classifier: c, Persona: "demo", Timeout: time.Second}
		var out bytes.Buffer
		if err := h.Run(context.Background(), bytes.NewReader(in), &out); err != nil {
			t.Fatal(err)
		}
		got := parseHookOutput(t, out.Bytes())
		parsed, err := agent.ParseHookInput(in)
		if err != nil && got.PermissionDecision != agent.Deny {
			t.Fatalf("malformed input (%v) got %s", err, got.PermissionDecision)
		}
		if got.PermissionDecision == agent.Allow {
			if a := c.ToolCall(parsed.ToolName, parsed.ToolInput, parsed.Cwd); a.Level != bot.Safe {
				t.Fatalf("%s call allowed without the gateway", a.Level)
			}
		}
	})
}

// FuzzClassifyLines: any input gives one JSON verdict per line.
func FuzzClassifyLines(f *testing.F) {
	f.Add([]byte("ls\nrm -rf /\n\n"))
	f.Add([]byte("echo $(\r\n\xff"))
	c := risk.Default()
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		if err := agent.ClassifyLines(c, bytes.NewReader(in), &out); err != nil {
			t.Fatal(err)
		}
		want := bytes.Count(in, []byte("\n"))
		if len(in) > 0 && in[len(in)-1] != '\n' {
			want++
		}
		if got := bytes.Count(out.Bytes(), []byte("\n")); got != want {
			t.Fatalf("%d verdicts for %d lines", got, want)
		}
	})
}
