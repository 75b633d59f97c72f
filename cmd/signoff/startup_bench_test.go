package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// startupFloor is how many times a trivial Go program's start-up the
// hook and classify may take (p50 against p50, measured in the same run).
const startupFloor = 3

// BenchmarkStartup starts four processes in turn, many times: a trivial
// Go program (built here, beside), signoff with an unknown command (the
// binary's start with nothing run), `signoff classify -- CMD` and `signoff
// hook claude-code` with a Bash tool call on stdin (the gateway address
// refuses at once, so the hook decides locally), and reports each one's
// p50 start-to-exit and the ratios next to the floor.
func BenchmarkStartup(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "signoff")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build signoff: %v\n%s", err, out)
	}
	trivialDir := filepath.Join(dir, "trivial")
	if err := os.MkdirAll(trivialDir, 0o755); err != nil {
		b.Fatal(err)
	}
	for name, body := range map[string]string{
		"go.mod":  "module trivial\n\ngo 1.22\n",
		"main.go": "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"safe\\n\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(trivialDir, name), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	trivial := filepath.Join(dir, "trivial-bin")
	build := exec.Command("go", "build", "-o", trivial, ".")
	build.Dir = trivialDir
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build trivial: %v\n%s", err, out)
	}
	home := b.TempDir()
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "SIGNOFF_URL=http://127.0.0.1:1", "XDG_DATA_HOME=" + home}
	hookInput := `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git status && go vet ./..."},"cwd":"` + home + `"}`
	runs := []struct {
		name  string
		args  []string
		stdin string
		want  string
		fails bool
	}{
		{"trivial", []string{trivial}, "", "safe", false},
		// the binary's own start: every package initialised, no command run
		{"signoff-unknown-command", []string{bin, "no-such-command"}, "", "", true},
		{"classify", []string{bin, "classify", "--", "git status && ls -la"}, "", "safe", false},
		{"hook", []string{bin, "hook", "claude-code"}, hookInput, "permissionDecision", false},
	}
	times := make([][]time.Duration, len(runs))
	for b.Loop() {
		for i, r := range runs {
			cmd := exec.Command(r.args[0], r.args[1:]...)
			cmd.Env = env
			cmd.Stdin = strings.NewReader(r.stdin)
			var out bytes.Buffer
			cmd.Stdout = &out
			t0 := time.Now()
			err := cmd.Run()
			times[i] = append(times[i], time.Since(t0))
			if (err != nil) != r.fails || !strings.Contains(out.String(), r.want) {
				b.Fatalf("%s: %v: %q", r.name, err, out.String())
			}
		}
	}
	p50 := make([]float64, len(runs))
	for i := range runs {
		slices.Sort(times[i])
		p50[i] = float64(times[i][len(times[i])/2].Microseconds()) / 1000
		b.ReportMetric(p50[i], runs[i].name+"-p50-ms")
	}
	b.ReportMetric(p50[2]/p50[0], "classify/trivial")
	b.ReportMetric(p50[3]/p50[0], "hook/trivial")
	b.ReportMetric(p50[1]/p50[0], "signoff-unknown-command/trivial")
	b.ReportMetric(startupFloor, "floor-ratio")
}
