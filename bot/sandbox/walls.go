package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/signoff/signoff/bot"
	defaults "github.com/signoff/signoff/configs/sandbox"
)

// Walls is the walls file (configs/sandbox/walls.yaml): what is hidden,
// what stays read-only inside writable roots, and what each known
// harness needs.
type Walls struct {
	Hide  []string `yaml:"hide"`
	Guard struct {
		Workspace []GuardEntry `yaml:"workspace"`
		Home      []GuardEntry `yaml:"home"`
	} `yaml:"guard"`
	Harnesses map[string]Harness `yaml:"harnesses"`
	Guide     string             `yaml:"guide"`
}

// GuardEntry is one guard file: read-only even inside a writable root.
type GuardEntry struct {
	Path string `yaml:"path"`
	// Kind is "dir" or "file" (the default): the stand-in's shape.
	Kind string `yaml:"kind"`
	// StandIn asks for an empty read-only stand-in when the path is
	// missing inside a writable root, so it cannot be created either.
	StandIn bool   `yaml:"standin"`
	Content string `yaml:"content"`
}

// Harness is what signoff run knows of an agent harness.
type Harness struct {
	Writable []string `yaml:"writable"`
	// Guide is the arguments that add the guide to the harness's
	// instructions: {guide} is the guide, {guide_toml} the guide as a
	// TOML string.
	Guide []string `yaml:"guide"`
}

// DefaultWalls reads the embedded walls file.
func DefaultWalls() (*Walls, error) { return ParseWalls(defaults.Walls) }

// ParseWalls reads a walls file.
func ParseWalls(data []byte) (*Walls, error) {
	var w Walls
	if err := yaml.UnmarshalWithOptions(data, &w, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("walls: %w", err)
	}
	for _, g := range append(slices.Clone(w.Guard.Workspace), w.Guard.Home...) {
		if g.Kind != "" && g.Kind != "dir" && g.Kind != "file" {
			return nil, fmt.Errorf("walls: guard %s: kind must be dir or file, not %q", g.Path, g.Kind)
		}
	}
	return &w, nil
}

// Options is what a sandbox is made of: the person's choices (persona,
// workspace, command) and what the caller knows must be hidden.
type Options struct {
	Home      string
	Workspace string
	Argv      []string
	Env       []string
	Walls     *Walls
	Persona   bot.Persona
	// Hidden and Guarded add absolute paths to the walls: the signoff
	// config and data dirs, key and token files (hidden); persona, rule
	// and policy folders (guarded).
	Hidden  []string
	Guarded []string
	// Doors are the ports inside the sandbox that lead out: each is
	// served outside by its Serve.
	Doors []Door
	// SetEnv is set in the agent's environment after the person's.
	SetEnv map[string]string
	// DropEnv names variables removed from the person's environment
	// (secrets of signoff itself: keys, tokens, store URLs); a name
	// ending in * is a prefix.
	DropEnv []string
}

// Plan is the sandbox worked out: every path resolved and absolute.
type Plan struct {
	Workspace string   `json:"workspace"`
	Writable  []string `json:"writable"` // the workspace first
	Hidden    []Mask   `json:"hidden"`
	Guarded   []string `json:"guarded"` // existing paths, read-only
	StandIns  []Mask   `json:"standins"`
	Argv      []string `json:"argv"`
	Env       []string `json:"env"`
	Ports     []int    `json:"ports"`     // the doors' ports inside
	Loopback  bool     `json:"loopback"`  // any loopback TCP port may be connected to
	Harness   string   `json:"harness"`   // the known harness started, if any
	GuideArgs int      `json:"guideArgs"` // how many arguments the guide added
	// Files are copied into the sandbox's private /tmp before the agent
	// starts (the proxy CA's bundle): path inside → file outside.
	Files map[string]string `json:"files,omitempty"`
}

// Mask is a path hidden (or stood in for) by an empty read-only file or
// directory.
type Mask struct {
	Path    string `json:"path"`
	Dir     bool   `json:"dir"`
	Content string `json:"content,omitempty"`
}

// MakePlan works out the walls for o. It reads the filesystem (to
// resolve symlinks and see what exists) and changes nothing.
func MakePlan(o Options) (*Plan, error) {
	if len(o.Argv) == 0 {
		return nil, errors.New("no command to run: give one after --")
	}
	if o.Walls == nil {
		return nil, errors.New("no walls")
	}
	ws, err := realDir(o.Workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if ws == "/" {
		return nil, errors.New("workspace: / cannot be the workspace (everything would be writable)")
	}
	home := o.Home
	if home != "" {
		if h, err := filepath.EvalSymlinks(home); err == nil {
			home = h
		}
	}
	p := &Plan{Workspace: ws, Writable: []string{ws}}
	expand := func(s string) string {
		if s == "~" {
			return home
		}
		if strings.HasPrefix(s, "~/") {
			if home == "" {
				return ""
			}
			return filepath.Join(home, s[2:])
		}
		return s
	}

	harness := filepath.Base(o.Argv[0])
	h, known := o.Walls.Harnesses[harness]
	argv := slices.Clone(o.Argv)
	if known {
		p.Harness = harness
		for _, w := range h.Writable {
			if d := expand(w); d != "" {
				p.Writable = appendWritable(p.Writable, d)
			}
		}
		if len(h.Guide) > 0 {
			guide := strings.TrimSpace(o.Walls.Guide)
			extra := make([]string, len(h.Guide))
			for i, a := range h.Guide {
				a = strings.ReplaceAll(a, "{guide_toml}", tomlString(guide))
				extra[i] = strings.ReplaceAll(a, "{guide}", guide)
			}
			argv = append(append([]string{argv[0]}, extra...), argv[1:]...)
			p.GuideArgs = len(extra)
		}
	}
	var sw bot.SandboxWalls
	if o.Persona.Sandbox != nil {
		sw = *o.Persona.Sandbox
	}
	for _, w := range sw.Writable {
		d := expand(w)
		if d == "" || !filepath.IsAbs(d) {
			return nil, fmt.Errorf("persona %s: sandbox.writable %q is not an absolute path or ~/…", o.Persona.Name, w)
		}
		if d == "/" || d == home {
			return nil, fmt.Errorf("persona %s: sandbox.writable %q would make %s writable: name the cache folders instead", o.Persona.Name, w, d)
		}
		p.Writable = appendWritable(p.Writable, d)
	}
	p.Loopback = sw.Loopback == "any"

	// Writable paths must exist to be mounted: caches are made.
	for i, w := range p.Writable {
		if i == 0 {
			continue
		}
		if err := os.MkdirAll(w, 0o755); err != nil {
			return nil, fmt.Errorf("writable path %s: %w", w, err)
		}
		if r, err := filepath.EvalSymlinks(w); err == nil {
			p.Writable[i] = r
		}
	}
	inWritable := func(path string) bool {
		for _, w := range p.Writable {
			if path == w || strings.HasPrefix(path, w+"/") {
				return true
			}
		}
		return false
	}

	seen := map[string]bool{}
	hide := func(path string) {
		path = resolve(path)
		if path == "" || seen["h"+path] {
			return
		}
		seen["h"+path] = true
		fi, err := os.Stat(path)
		switch {
		case err == nil:
			p.Hidden = append(p.Hidden, Mask{Path: path, Dir: fi.IsDir()})
		case inWritable(path):
			// Missing inside a writable root: stand in, so the agent
			// cannot create it (a credential it plants would be used).
			p.StandIns = append(p.StandIns, Mask{Path: path, Dir: true})
			p.Hidden = append(p.Hidden, Mask{Path: path, Dir: true})
		}
	}
	for _, h := range o.Walls.Hide {
		hide(expand(h))
	}
	for _, h := range sw.Hide {
		d := expand(h)
		if d == "" || !filepath.IsAbs(d) {
			return nil, fmt.Errorf("persona %s: sandbox.hide %q is not an absolute path or ~/…", o.Persona.Name, h)
		}
		hide(d)
	}
	for _, h := range o.Hidden {
		hide(h)
	}

	guard := func(path string, g GuardEntry, standIn bool) {
		path = resolve(path)
		if path == "" || seen["g"+path] || seen["h"+path] {
			return
		}
		seen["g"+path] = true
		if _, err := os.Lstat(path); err == nil {
			if inWritable(path) {
				p.Guarded = append(p.Guarded, path)
			}
			return
		}
		if !standIn || !inWritable(path) {
			return
		}
		m := Mask{Path: path, Dir: g.Kind == "dir", Content: g.Content}
		// A missing parent: the highest missing folder stands in.
		for !parentExists(m.Path) && inWritable(filepath.Dir(m.Path)) {
			m = Mask{Path: filepath.Dir(m.Path), Dir: true}
		}
		if parentExists(m.Path) && (m.Path == path || !seen["g"+m.Path]) {
			seen["g"+m.Path] = true
			p.StandIns = append(p.StandIns, m)
			p.Guarded = append(p.Guarded, m.Path)
		}
	}
	for _, g := range o.Walls.Guard.Workspace {
		guard(filepath.Join(ws, g.Path), g, g.StandIn)
	}
	for _, g := range o.Walls.Guard.Home {
		if d := expand(g.Path); d != "" {
			guard(d, g, true)
		}
	}
	for _, g := range o.Guarded {
		guard(g, GuardEntry{Kind: "dir"}, false)
	}

	p.Hidden = outermost(p.Hidden)
	for _, d := range o.Doors {
		p.Ports = append(p.Ports, d.Port)
	}
	p.Argv = argv
	p.Env = agentEnv(o.Env, o.DropEnv, o.SetEnv)
	return p, nil
}

// outermost drops each mask under another: the outer one hides it.
func outermost(ms []Mask) []Mask {
	out := ms[:0]
	for _, m := range ms {
		if !slices.ContainsFunc(ms, func(o Mask) bool { return o.Dir && strings.HasPrefix(m.Path, o.Path+"/") }) {
			out = append(out, m)
		}
	}
	return out
}

// appendWritable adds d unless it is already covered.
func appendWritable(ws []string, d string) []string {
	for _, w := range ws {
		if d == w || strings.HasPrefix(d, w+"/") {
			return ws
		}
	}
	return append(ws, d)
}

// realDir is dir made absolute with its symlinks resolved; it must be a
// directory.
func realDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	r, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s does not exist", abs)
		}
		return "", err
	}
	fi, err := os.Stat(r)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", abs)
	}
	return r, nil
}

// resolve is path with its symlinks resolved: a wall holds where a
// symlink points. A missing path keeps its resolved parent (one level:
// deeper missing paths matter only inside writable roots, where the
// stand-in walks up itself).
func resolve(path string) string {
	if path == "" {
		return ""
	}
	path = filepath.Clean(path)
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	dir, base := filepath.Split(path)
	if r, err := filepath.EvalSymlinks(filepath.Clean(dir)); err == nil {
		return filepath.Join(r, base)
	}
	return path
}

func parentExists(path string) bool {
	fi, err := os.Stat(filepath.Dir(path))
	return err == nil && fi.IsDir()
}

// agentEnv is the person's environment less drop (and every variable
// set is replaced), then set, sorted for a stable start.
func agentEnv(env, drop []string, set map[string]string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if slices.ContainsFunc(drop, func(d string) bool {
			if p, ok := strings.CutSuffix(d, "*"); ok {
				return strings.HasPrefix(k, p)
			}
			return d == k
		}) {
			continue
		}
		if _, ok := set[k]; ok {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// DoorsLine is what the start-up line says of the doors.
type DoorsLine struct {
	Proxy    string
	Revision int
	Hosts    int
	Gateway  string
	Token    bool
}

// StartLine is the one line signoff run prints at start: the workspace,
// what else is writable, what is hidden, the doors in force and where to
// see what was blocked.
func StartLine(p *Plan, home string, d DoorsLine) string {
	short := func(path string) string {
		if home != "" && strings.HasPrefix(path, home+"/") {
			return "~/" + path[len(home)+1:]
		}
		return path
	}
	list := func(paths []string, max int) string {
		out := make([]string, 0, max+1)
		for i, p := range paths {
			if i == max {
				out = append(out, fmt.Sprintf("… %d more", len(paths)-max))
				break
			}
			out = append(out, short(p))
		}
		return strings.Join(out, ", ")
	}
	writable := append([]string{"/tmp (private)"}, p.Writable[1:]...)
	hidden := make([]string, len(p.Hidden))
	for i, m := range p.Hidden {
		hidden[i] = m.Path
	}
	guarded := make([]string, len(p.Guarded))
	for i, g := range p.Guarded {
		guarded[i] = g
		if strings.HasPrefix(g, p.Workspace+"/") {
			guarded[i] = g[len(p.Workspace)+1:]
		}
	}
	tok := "no token (the gateway takes loopback calls without one); only an agent's calls pass"
	if d.Token {
		tok = "a token of its own (request, check, read:requests, net:request)"
	}
	return fmt.Sprintf("signoff run: sandbox for %s — workspace %s (writable); also writable: %s; read-only there: %s; hidden: %s; "+
		"doors: egress proxy %s (policy revision %d, %d host(s); everything else refused and filed as a draft), gateway %s with %s; "+
		"no other network; see what was blocked: signoff net requests --all",
		filepath.Base(p.Argv[0]), short(p.Workspace), list(writable, 4), list(guarded, 6), list(hidden, 5), d.Proxy, d.Revision, d.Hosts, d.Gateway, tok)
}
