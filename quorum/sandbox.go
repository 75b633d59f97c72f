package quorum

import (
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/signoff/signoff/bot"
)

// sandboxFile is `sandbox: {writable: [...], hide: [...], loopback: any}`.
type sandboxFile struct {
	Writable []text `yaml:"writable"`
	Hide     []text `yaml:"hide"`
	Loopback text   `yaml:"loopback"`
	At       text   `yaml:"-"`
}

func (s *sandboxFile) UnmarshalYAML(n ast.Node) error {
	type plain sandboxFile
	var p plain
	if err := yaml.NodeToValue(n, &p, yaml.Strict()); err != nil {
		return err
	}
	*s = sandboxFile(p)
	s.At = at(n)
	return nil
}

// parseSandbox reads the walls signoff run adds for this persona. Paths
// are absolute or start with ~/; a writable path may not be / or the
// whole home (name the cache folders instead).
func parseSandbox(f *personaFile, p *bot.Persona, add func(text, bool, string, ...any)) {
	s := f.Sandbox
	if s == nil {
		return
	}
	w := &bot.SandboxWalls{}
	path := func(field string, t text) (string, bool) {
		v := t.V
		if v != "~" && !strings.HasPrefix(v, "~/") && !filepath.IsAbs(v) {
			add(t, false, "sandbox.%s %q must be an absolute path or start with ~/", field, v)
			return "", false
		}
		return filepath.Clean(v), true
	}
	for _, t := range s.Writable {
		v, ok := path("writable", t)
		if !ok {
			continue
		}
		if v == "/" || v == "~" {
			add(t, false, "sandbox.writable %q would make everything there writable: name the cache folders instead", t.V)
			continue
		}
		w.Writable = append(w.Writable, v)
	}
	for _, t := range s.Hide {
		if v, ok := path("hide", t); ok {
			w.Hide = append(w.Hide, v)
		}
	}
	switch s.Loopback.V {
	case "", "doors":
	case "any":
		w.Loopback = "any"
	default:
		add(s.Loopback, false, "sandbox.loopback must be doors or any, not %q", s.Loopback.V)
	}
	p.Sandbox = w
}
