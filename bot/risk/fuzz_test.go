package risk

import (
	"encoding/json"
	"testing"

	"github.com/signoff/signoff/bot"
)

func checkAssessment(t *testing.T, what string, a bot.Assessment) {
	t.Helper()
	switch a.Level {
	case bot.Safe, bot.Caution, bot.Dangerous:
	default:
		t.Fatalf("%s: level %q", what, a.Level)
	}
	if a.Level != bot.Safe && len(a.Reasons) == 0 {
		t.Fatalf("%s: %s with no reason", what, a.Level)
	}
	if a.Reasons == nil {
		t.Fatalf("%s: nil reasons", what)
	}
}

func FuzzCommand(f *testing.F) {
	for _, l := range readCorpus(f) {
		f.Add(l.cmd)
	}
	c := Default()
	f.Fuzz(func(t *testing.T, cmd string) {
		checkAssessment(t, "Command", c.Command(cmd))
		checkAssessment(t, "Classify", c.Classify(bot.KindTool, cmd))
	})
}

func FuzzToolCall(f *testing.F) {
	seeds := []struct{ tool, input, cwd string }{
		{"Bash", `{"command":"git status"}`, "/w"},
		{"Bash", `{"command":["bash","-c","rm -rf /"]}`, ""},
		{"Read", `{"file_path":"/home/u/.ssh/id_rsa"}`, "/home/u/p"},
		{"Write", `{"file_path":"../x","content":"y"}`, "/w"},
		{"Edit", `{"file_path":"~/.bashrc","old_string":"a","new_string":"b"}`, "/"},
		{"Glob", `{"pattern":"**/*.go","path":"/"}`, "/w"},
		{"Grep", `{"pattern":"x","glob":"~/.aws/*"}`, "/w"},
		{"WebFetch", `{"url":"https://x"}`, ""},
		{"Read", `{"file_path":`, ""},
		{"x", `[]`, ""},
		{"Read", `{"file_path":null}`, ""},
	}
	for _, s := range seeds {
		f.Add(s.tool, []byte(s.input), s.cwd)
	}
	c := Default()
	f.Fuzz(func(t *testing.T, tool string, input []byte, cwd string) {
		checkAssessment(t, "ToolCall", c.ToolCall(tool, json.RawMessage(input), cwd))
	})
}
