package risk

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/signoff/signoff/bot"
)

// hookPayload is what the Claude Code hook hands the classifier.
func hookPayload(t *testing.T, tool string, input map[string]any, cwd string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"tool_name": tool, "tool_input": input, "cwd": cwd})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An agent links an innocent-looking workspace path to the guard's own
// settings (or out of the workspace) and writes through the link.
func TestWriteThroughSymlinkToGuardFileIsDangerous(t *testing.T) {
	ws := t.TempDir()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustLink := func(target, link string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	mustLink(filepath.Join(ws, ".claude", "settings.json"), "notes.json")
	mustLink(filepath.Join(ws, ".claude"), "docs")
	mustLink(filepath.Join(home, "outside.txt"), "out.txt")
	mustLink(home, "elsewhere")
	c := Default()
	for _, tc := range []struct{ name, tool, path string }{
		{"file link to settings", "Write", "notes.json"},
		{"dir link to .claude", "Edit", "docs/settings.json"},
		{"new file under dir link", "Write", "docs/new-hook.json"},
		{"file link outside", "Write", "out.txt"},
		{"dir link outside, new file", "Write", "elsewhere/x/y.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := c.Classify(bot.KindTool, hookPayload(t, tc.tool, map[string]any{"file_path": tc.path, "content": "x"}, ws))
			if a.Level != bot.Dangerous {
				t.Errorf("%s %s through a symlink = %s %q, want dangerous", tc.tool, tc.path, a.Level, a.Reasons)
			}
		})
	}
	// The plain workspace file next to them stays caution.
	if a := c.Classify(bot.KindTool, hookPayload(t, "Write", map[string]any{"file_path": "src/main.go", "content": "x"}, ws)); a.Level != bot.Caution {
		t.Errorf("Write src/main.go = %s %q, want caution", a.Level, a.Reasons)
	}
}

// The agent reads the person's key through a link in the workspace.
func TestReadKeyThroughSymlinkIsDangerous(t *testing.T) {
	ws := t.TempDir()
	home := t.TempDir()
	key := filepath.Join(home, ".config", "signoff", "key")
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("nsec1…"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(key, filepath.Join(ws, "README.txt")); err != nil {
		t.Fatal(err)
	}
	a := Default().Classify(bot.KindTool, hookPayload(t, "Read", map[string]any{"file_path": "README.txt"}, ws))
	if a.Level != bot.Dangerous {
		t.Errorf("Read of a link to the signoff key = %s %q, want dangerous", a.Level, a.Reasons)
	}
}

// Issue 9, attack 1: the agent approves its own request with the owner's
// key, through every wrapper it might hide behind.
func TestSelfApprovalIsDangerous(t *testing.T) {
	c := Default()
	for _, cmd := range []string{
		"cat ~/.config/signoff/key",
		`signoff approve "$(curl -s localhost:8080/v1/requests?status=pending | jq -r '.[0].id')"`,
		"signoff exec -- rm -rf X & signoff approve abc",
		"env signoff approve abc",
		"sh -c 'signoff approve abc'",
		"nohup signoff deny abc &",
		"signoff exec -- signoff approve abc",
		"signoff keygen",
		"signoff net approve example.com",
		"signoff tokens create",
		"signoff ext install ./evil/signoff.json --yes", // mints a token with the scopes the file asks for
		"signoff ext remove release-bot",
		"signoff net deny abc --reason no",
		"signoff approve --bunker bunker://abc?relay=ws://127.0.0.1:1 abc",
		"SIGNOFF_RULES=./permissive.yaml signoff exec -- ls",
		"redis-cli HSET 'signoff:req:{ID}' status approved",
		"redis-cli PUBLISH signoff:decided ID",
		`cat "$SIGNOFF_KEY"`,
	} {
		if a := c.Command(cmd); a.Level != bot.Dangerous {
			t.Errorf("Command(%q) = %s %q, want dangerous", cmd, a.Level, a.Reasons)
		}
	}
	if a := c.ToolCall("Read", json.RawMessage(`{"file_path":"/home/u/.config/signoff/key"}`), "/home/u/proj"); a.Level != bot.Dangerous {
		t.Errorf("Read ~/.config/signoff/key = %s %q, want dangerous", a.Level, a.Reasons)
	}
}

// Issue 9, attack 6: the guard's own files through the Write and Edit
// tools, in any letter case.
func TestGuardFileWritesAreDangerous(t *testing.T) {
	c := Default()
	for _, p := range []string{".claude/settings.json", ".CLAUDE/Settings.json", ".mcp.json", ".codex/config.toml", ".cursor/hooks.json", ".gemini/settings.json", ".signoff/x", "configs/personas/demo.yaml", "configs/rules/core.yaml", ".git/config", ".Git/Hooks/pre-commit"} {
		for _, tool := range []string{"Write", "Edit"} {
			if a := c.ToolCall(tool, json.RawMessage(`{"file_path":"`+p+`","content":"x","old_string":"a","new_string":"b"}`), "/w"); a.Level != bot.Dangerous {
				t.Errorf("%s %s = %s %q, want dangerous", tool, p, a.Level, a.Reasons)
			}
		}
	}
}
