package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/signoff/signoff/quorum"
)

// officialPackages are the agents' own SDKs (and a TOML parser) the
// printed configuration is checked against, pinned.
var officialPackages = []string{
	"@anthropic-ai/claude-agent-sdk@0.3.336",
	"@modelcontextprotocol/sdk@1.32.2",
	"typescript@5.9.3",
	"smol-toml@1.9.1",
	"zod@4.1.12",
}

var npmOnce sync.Once

// officialNPM installs officialPackages once into the user cache and
// returns the folder. It fails the test when node or npm is missing.
func officialNPM(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (apt-get install nodejs npm): the agents' official SDKs check what init prints", tool)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256([]byte(strings.Join(officialPackages, " ")))
	dir := filepath.Join(cache, "signoff-test-npm", hex.EncodeToString(sum[:6]))
	var installErr error
	npmOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".installed")); err == nil {
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			installErr = err
			return
		}
		os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"signoff-test","private":true,"type":"module"}`), 0o644)
		cmd := exec.Command("npm", append([]string{"install", "--no-audit", "--no-fund", "--silent"}, officialPackages...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("npm install:\n%s", out)
			installErr = err
			return
		}
		installErr = os.WriteFile(filepath.Join(dir, "node_modules", ".installed"), nil, 0o644)
	})
	if installErr != nil {
		t.Fatalf("npm install %v: %v", officialPackages, installErr)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".installed")); err != nil {
		t.Fatal("the official packages are not installed (an earlier install failed)")
	}
	return dir
}

// runNode runs a script (ES module) beside the installed packages.
func runNode(t *testing.T, npm, name, script string, args ...string) (string, error) {
	t.Helper()
	dir, err := os.MkdirTemp(npm, "t-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", append([]string{path}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// initBlock is the block init printed under the line holding header: its
// indented lines up to the first blank one, unindented by two.
func initBlock(t *testing.T, out, header string) string {
	t.Helper()
	i := strings.Index(out, header)
	if i < 0 {
		t.Fatalf("init printed no %q:\n%s", header, out)
	}
	rest := out[i:]
	rest = rest[strings.Index(rest, "\n")+1:]
	var b strings.Builder
	for _, line := range strings.Split(rest, "\n") {
		if strings.TrimSpace(line) == "" || !strings.HasPrefix(line, "  ") {
			break
		}
		b.WriteString(strings.TrimPrefix(line, "  ") + "\n")
	}
	return b.String()
}

func initOutput(t *testing.T, args ...string) (out, home string) {
	t.Helper()
	bin := signoffBinary(t)
	env, home, work := freshUser(t)
	code, out, errs := run(t, bin, env, work, append([]string{"init"}, args...)...)
	if code != 0 {
		t.Fatalf("init = %d\n%s%s", code, out, errs)
	}
	return out, home
}

// TestInitClaudeSettingsTypeCheck: the Claude Code settings init prints
// type-check against the official SDK's Settings, with the hook failing
// closed ("onFailure": "block"); and a wrong value would not.
func TestInitClaudeSettingsTypeCheck(t *testing.T) {
	npm := officialNPM(t)
	out, _ := initOutput(t)
	block := initBlock(t, out, "Claude Code — merge into ~/.claude/settings.json")
	var settings struct {
		Hooks map[string][]struct {
			Matcher string           `json:"matcher"`
			Hooks   []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(block), &settings); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, block)
	}
	if h := settings.Hooks["PreToolUse"]; len(h) != 1 || len(h[0].Hooks) != 1 || h[0].Hooks[0]["onFailure"] != "block" {
		t.Fatalf("the PreToolUse hook does not fail closed:\n%s", block)
	}
	tsc := func(settings string) (string, error) {
		script := `import type { Settings } from "@anthropic-ai/claude-agent-sdk";
export const settings: Settings = ` + settings + ";\n"
		dir, err := os.MkdirTemp(npm, "t-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		os.WriteFile(filepath.Join(dir, "settings.ts"), []byte(script), 0o644)
		cmd := exec.Command("node", filepath.Join(npm, "node_modules", "typescript", "bin", "tsc"), "--noEmit", "--strict",
			"--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--skipLibCheck", "settings.ts")
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if msg, err := tsc(block); err != nil {
		t.Fatalf("init's Claude Code settings do not type-check against the SDK's Settings: %v\n%s\n%s", err, msg, block)
	}
	if msg, err := tsc(strings.Replace(block, `"block"`, `"stop"`, 1)); err == nil || !strings.Contains(msg, "onFailure") && !strings.Contains(msg, `"stop"`) {
		t.Errorf("the type check let a wrong onFailure through (it checks nothing): %v\n%s", err, msg)
	}
}

// TestInitCodexConfig: the config.toml lines parse as TOML and turn the
// hooks feature on; the hooks file is Codex's: only "hooks" at the root,
// PreToolUse handlers of type command with the hook.
func TestInitCodexConfig(t *testing.T) {
	npm := officialNPM(t)
	out, _ := initOutput(t)
	toml := initBlock(t, out, "Codex — and in ~/.codex/config.toml:")
	cmd := exec.Command("node", "-e", `import("`+filepath.Join(npm, "node_modules", "smol-toml", "dist", "index.js")+`").then(({parse}) => {
let s = ""; process.stdin.on("data", d => s += d); process.stdin.on("end", () => process.stdout.write(JSON.stringify(parse(s)))); })`)
	cmd.Stdin = strings.NewReader(toml)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("config.toml lines do not parse as TOML: %v\n%s\n%s", err, b, toml)
	}
	var parsed struct {
		Features struct {
			Hooks bool `json:"hooks"`
		} `json:"features"`
	}
	if err := json.Unmarshal(b, &parsed); err != nil || !parsed.Features.Hooks {
		t.Errorf("config.toml %q parsed as %s: features.hooks is not true", toml, b)
	}

	hooks := initBlock(t, out, "Codex — ~/.codex/hooks.json")
	var root map[string]json.RawMessage
	if err := json.Unmarshal([]byte(hooks), &root); err != nil {
		t.Fatalf("hooks.json is not JSON: %v\n%s", err, hooks)
	}
	for k := range root {
		if k != "hooks" && k != "description" {
			t.Errorf("hooks.json has %q at its root: Codex refuses the file", k)
		}
	}
	var file struct {
		Hooks map[string][]struct {
			Matcher *string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
				Timeout int    `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	json.Unmarshal(root["hooks"], &file.Hooks)
	pre := file.Hooks["PreToolUse"]
	if len(file.Hooks) != 1 || len(pre) != 1 || len(pre[0].Hooks) != 1 || pre[0].Hooks[0].Type != "command" ||
		!strings.HasSuffix(pre[0].Hooks[0].Command, " hook codex --persona demo") || pre[0].Hooks[0].Timeout <= 0 {
		t.Errorf("hooks.json is not one PreToolUse command hook running signoff hook codex:\n%s", hooks)
	}
}

// TestInitOffersNostrForThePhone: without --relay init says how; with it
// the persona posts to those relays, and init says the notes are public
// and which clients send ✅.
func TestInitOffersNostrForThePhone(t *testing.T) {
	out, _ := initOutput(t)
	if !strings.Contains(out, "--relay wss://") {
		t.Errorf("init does not offer the phone route:\n%s", out)
	}
	out, home := initOutput(t, "--relay", "wss://relay.example.com", "--relay", "wss://nos.example.org")
	for _, want := range []string{"public note", "Amethyst", `"+", which is ignored`, "pending --watch", "tokens create --name alice --scopes request,check,read:requests"} {
		if !strings.Contains(out, want) {
			t.Errorf("init output lacks %q:\n%s", want, out)
		}
	}
	path := filepath.Join(home, ".config", "signoff", "personas", "demo.yaml")
	data, _ := os.ReadFile(path)
	p, problems := quorum.ParsePersona(path, data)
	if len(problems.Errors()) > 0 {
		t.Fatalf("%s: %v\n%s", path, problems, data)
	}
	var relays []string
	for _, c := range p.Channels {
		relays = append(relays, c.Relays...)
	}
	if strings.Join(relays, " ") != "wss://relay.example.com wss://nos.example.org" {
		t.Errorf("persona relays = %v:\n%s", relays, data)
	}
	bin := signoffBinary(t)
	env, _, work := freshUser(t)
	if code, _, errs := run(t, bin, env, work, "init", "--relay", "https://relay.example.com"); code != 2 || !strings.Contains(errs, "wss://") {
		t.Errorf("init --relay https://… = %d %s", code, errs)
	}
}
