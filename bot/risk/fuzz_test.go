package risk

import (
	"encoding/json"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

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
	for _, ls := range readCorpusDir(f) {
		for _, l := range ls {
			f.Add(l.cmd)
		}
	}
	for _, cmd := range append(issue28Evasions, issue28Shapes...) {
		f.Add(cmd) // the shapes, awk redirections, WHERE tautologies, [[ ]] subscripts
	}
	c := Default()
	f.Fuzz(func(t *testing.T, cmd string) {
		a := c.Command(cmd)
		checkAssessment(t, "Command", a)
		checkAssessment(t, "Classify", c.Classify(bot.KindTool, cmd))
		e := c.Explain(cmd)
		checkAssessment(t, "Explain", e.Assessment)
		if e.Level != a.Level {
			t.Fatalf("Explain(%q) level %s, Command %s", cmd, e.Level, a.Level)
		}
	})
}

// FuzzPlainWords holds the parser-skipping gate to the parser: whatever
// plainWords accepts must parse as one simple command with the same
// words, and classify the same as through the parser.
func FuzzPlainWords(f *testing.F) {
	for _, s := range []string{"git status", "ls -la src/", "rm -rf build", "echo 'a b' \"c\"", "grep -rn 'x' *.go", "a=b c", "if x", "rm '-rf' /", "x'y'z", "kubectl get pods -n prod"} {
		f.Add(s)
	}
	c := Default()
	f.Fuzz(func(t *testing.T, cmd string) {
		args, ok := plainWords(cmd, nil)
		if !ok {
			return
		}
		p := parsers.Get().(*syntax.Parser)
		file, err := p.Parse(strings.NewReader(cmd), "")
		parsers.Put(p)
		if err != nil {
			t.Fatalf("plainWords accepted %q, which does not parse: %v", cmd, err)
		}
		if len(file.Stmts) != 1 || len(file.Stmts[0].Redirs) != 0 || file.Stmts[0].Background || file.Stmts[0].Negated {
			t.Fatalf("plainWords accepted %q, which is not one plain command", cmd)
		}
		ce, isCall := file.Stmts[0].Cmd.(*syntax.CallExpr)
		if !isCall || len(ce.Assigns) != 0 || len(ce.Args) != len(args) {
			t.Fatalf("plainWords(%q) = %d words; the parser sees something else", cmd, len(args))
		}
		for i, a := range ce.Args {
			v := viewWord(a)
			if v.text != args[i].text || v.static != args[i].static || v.glob != args[i].glob {
				t.Fatalf("plainWords(%q) word %d = %+v, parser %+v", cmd, i, args[i], v)
			}
		}
		w := walker{r: c.rules}
		w.shell(cmd, ctx{})
		if got, want := c.Command(cmd), w.result(); got.Level != want.Level || strings.Join(got.Reasons, "|") != strings.Join(want.Reasons, "|") {
			t.Fatalf("Command(%q) = %s %q through the gate, %s %q through the parser", cmd, got.Level, got.Reasons, want.Level, want.Reasons)
		}
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
		{"apply_patch", `{"input":"*** Begin Patch\n*** Update File: a.go\n*** Move to: ~/.bashrc\n*** End Patch"}`, "/w"},
		{"apply_patch", `{"input":"*** Begin Patch\n*** Add File: \n*** End Patch"}`, "/w"},
		{"Write", `{"file_path":".CLAUDE/settings.json","content":"x"}`, "/w"},
	}
	for _, s := range seeds {
		f.Add(s.tool, []byte(s.input), s.cwd)
	}
	c := Default()
	f.Fuzz(func(t *testing.T, tool string, input []byte, cwd string) {
		checkAssessment(t, "ToolCall", c.ToolCall(tool, json.RawMessage(input), cwd))
	})
}
