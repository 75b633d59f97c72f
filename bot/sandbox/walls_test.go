package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/signoff/signoff/bot"
)

func TestDefaultWallsParse(t *testing.T) {
	w, err := DefaultWalls()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"~/.ssh", "~/.gnupg", "~/.aws", "~/.kube", "~/.netrc"} {
		if !slices.Contains(w.Hide, want) {
			t.Errorf("default walls do not hide %s", want)
		}
	}
	if _, err := ParseWalls([]byte("hide: [x]\nunknown: 1\n")); err == nil {
		t.Errorf("an unknown key in a walls file was accepted")
	}
	if _, err := ParseWalls([]byte("guard:\n  workspace:\n    - path: x\n      kind: socket\n")); err == nil {
		t.Errorf("a guard of kind socket was accepted")
	}
}

// plan makes a home and a workspace and plans a sandbox in them.
func plan(t *testing.T, p bot.Persona, setup func(home, ws string)) (*Plan, string, string) {
	t.Helper()
	root := t.TempDir()
	home, ws := filepath.Join(root, "home"), filepath.Join(root, "ws")
	os.MkdirAll(home, 0o755)
	os.MkdirAll(ws, 0o755)
	if setup != nil {
		setup(home, ws)
	}
	w, err := DefaultWalls()
	if err != nil {
		t.Fatal(err)
	}
	pl, err := MakePlan(Options{Home: home, Workspace: ws, Argv: []string{"sh"}, Walls: w, Persona: p,
		Env: []string{"PATH=/bin", "SIGNOFF_TOKEN=secret", "SIGNOFF_KEY=/k", "HOME=" + home}, DropEnv: []string{"SIGNOFF_*"},
		SetEnv: map[string]string{"SIGNOFF_URL": "http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	return pl, home, ws
}

func TestPlanHidesWhatExistsAndGuardsTheWorkspace(t *testing.T) {
	pl, home, ws := plan(t, bot.Persona{Name: "p"}, func(home, ws string) {
		os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
		os.WriteFile(filepath.Join(home, ".netrc"), []byte("x"), 0o600)
		os.MkdirAll(filepath.Join(ws, ".git/hooks"), 0o755)
		os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(home, "ssh-link"))
	})
	var hidden []string
	for _, m := range pl.Hidden {
		hidden = append(hidden, m.Path)
	}
	for _, want := range []string{filepath.Join(home, ".ssh"), filepath.Join(home, ".netrc")} {
		if !slices.Contains(hidden, want) {
			t.Errorf("%s not hidden: %v", want, hidden)
		}
	}
	if slices.Contains(hidden, filepath.Join(home, ".aws")) {
		t.Errorf("a missing credential outside the writable roots was planned as a mount: %v", hidden)
	}
	if !slices.Contains(pl.Guarded, filepath.Join(ws, ".git")) {
		t.Errorf(".git not guarded: %v", pl.Guarded)
	}
	standIns := map[string]bool{}
	for _, m := range pl.StandIns {
		standIns[strings.TrimPrefix(m.Path, ws+"/")] = m.Dir
	}
	if d, ok := standIns[".claude"]; !ok || !d {
		t.Errorf("no folder stand-in for a missing .claude: %v", pl.StandIns)
	}
	if d, ok := standIns[".mcp.json"]; !ok || d {
		t.Errorf("no file stand-in for a missing .mcp.json: %v", pl.StandIns)
	}
	if _, ok := standIns["configs/personas"]; ok {
		t.Errorf("a stand-in was planned for a guard that asks for none")
	}
	for _, kv := range pl.Env {
		if strings.HasPrefix(kv, "SIGNOFF_TOKEN=") || strings.HasPrefix(kv, "SIGNOFF_KEY=") {
			t.Errorf("the agent's environment keeps %s", kv)
		}
	}
	if !slices.Contains(pl.Env, "SIGNOFF_URL=http://127.0.0.1:1") {
		t.Errorf("SIGNOFF_URL not set: %v", pl.Env)
	}
}

func TestPlanHomeAsWorkspaceGuardsTheHomesFiles(t *testing.T) {
	root := t.TempDir()
	w, _ := DefaultWalls()
	pl, err := MakePlan(Options{Home: root, Workspace: root, Argv: []string{"sh"}, Walls: w, Persona: bot.Persona{Name: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, m := range pl.StandIns {
		paths = append(paths, m.Path)
	}
	for _, want := range []string{".bashrc", ".ssh", ".gitconfig", ".claude"} {
		if !slices.Contains(paths, filepath.Join(root, want)) {
			t.Errorf("home as the workspace: no stand-in for a missing %s", want)
		}
	}
}

func TestPlanRefusesBadPersonaWalls(t *testing.T) {
	w, _ := DefaultWalls()
	root := t.TempDir()
	for _, sw := range []bot.SandboxWalls{{Writable: []string{"/"}}, {Writable: []string{"~"}}, {Writable: []string{"relative"}}, {Hide: []string{"relative"}}} {
		_, err := MakePlan(Options{Home: root, Workspace: root, Argv: []string{"sh"}, Walls: w, Persona: bot.Persona{Name: "p", Sandbox: &sw}})
		if err == nil {
			t.Errorf("walls %+v accepted", sw)
		}
	}
	if _, err := MakePlan(Options{Home: root, Workspace: "/", Argv: []string{"sh"}, Walls: w}); err == nil {
		t.Errorf("/ accepted as the workspace")
	}
	if _, err := MakePlan(Options{Home: root, Workspace: filepath.Join(root, "gone"), Argv: []string{"sh"}, Walls: w}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a missing workspace: %v", err)
	}
	if _, err := MakePlan(Options{Home: root, Workspace: root, Walls: w}); err == nil {
		t.Errorf("no command accepted")
	}
}

func TestPlanAddsTheGuideForKnownHarnesses(t *testing.T) {
	w, _ := DefaultWalls()
	root := t.TempDir()
	for name, flag := range map[string]string{"claude": "--append-system-prompt", "codex": "-c"} {
		pl, err := MakePlan(Options{Home: root, Workspace: root, Argv: []string{"/usr/bin/" + name, "--x"}, Walls: w, Persona: bot.Persona{Name: "p"}})
		if err != nil {
			t.Fatal(err)
		}
		if pl.Harness != name || pl.Argv[1] != flag || pl.Argv[len(pl.Argv)-1] != "--x" || !strings.Contains(strings.Join(pl.Argv, " "), "signoff net request") {
			t.Errorf("%s: argv %q", name, pl.Argv)
		}
	}
	if got := tomlString("a\"b\\c\nd"); got != `"a\"b\\c\nd"` {
		t.Errorf("tomlString = %s", got)
	}
}

func TestPlanDropsMasksUnderAnother(t *testing.T) {
	got := outermost([]Mask{{Path: "/h/.config/signoff", Dir: true}, {Path: "/h/.config/signoff/key"}, {Path: "/h/.config/signoffx"}})
	if len(got) != 2 || got[0].Path != "/h/.config/signoff" || got[1].Path != "/h/.config/signoffx" {
		t.Errorf("outermost = %v", got)
	}
}
