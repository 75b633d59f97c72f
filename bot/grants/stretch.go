package grants

import (
	_ "embed"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
)

// Knowledge is what grants know about programs: which run another command
// (wrappers), which run something no grant can follow (exact only), and
// per program which options narrow, name a target, are harmless or widen,
// and how its operands may differ. It is data (stretch.yaml).
type Knowledge struct {
	Harmless  []string           `yaml:"harmless"`
	Wrappers  []Wrapper          `yaml:"wrappers"`
	ExactOnly []string           `yaml:"exact_only"`
	Programs  map[string]Program `yaml:"programs"`
}

// Wrapper is a program that runs another command.
type Wrapper struct {
	Name         string   `yaml:"name"`
	Sub          string   `yaml:"sub"`
	ValueOptions []string `yaml:"value_options"`
	// Targets is how many operands are the wrapper's own (a host, a
	// container, a duration) before the command it runs.
	Targets int `yaml:"targets"`
	// Separator must come before the command (kubectl exec … --).
	Separator string `yaml:"separator"`
	// Shell: the rest is one line a shell reads again (ssh).
	Shell bool `yaml:"shell"`
	// Package: the first operand is a package, judged as the program it
	// runs (npx, dlx, bunx); its version is part of its name.
	Package bool `yaml:"package"`
	// Assignments: NAME=value words are the wrapper's (env).
	Assignments bool `yaml:"assignments"`
}

// Program is what a grant may stretch to for one program.
type Program struct {
	Subcommands    bool              `yaml:"subcommands"`
	LongSingleDash bool              `yaml:"long_single_dash"`
	ValueOptions   []string          `yaml:"value_options"`
	Narrows        []string          `yaml:"narrows"`
	Target         []string          `yaml:"target"`
	Harmless       []string          `yaml:"harmless"`
	Widens         map[string]string `yaml:"widens"`
	Operands       string            `yaml:"operands"`
	// Examples are the program's own cases, run by the package's tests.
	Examples []Example `yaml:"examples"`
}

// Example is a granted call with later calls it must and must not cover.
type Example struct {
	Grant  string   `yaml:"grant"`
	Covers []string `yaml:"covers"`
	Not    []string `yaml:"not"`
}

// Operand rules (Program.Operands, bot.GrantScope.OperandRule).
const (
	OperandsSame  = "same"
	OperandsPaths = "paths"
	OperandsKind  = "kind"
	OperandsAny   = "any"
)

//go:embed stretch.yaml
var stretchYAML []byte

// Default is the knowledge shipped in stretch.yaml, read on first use
// (not at every process start: the hook and signoff run start often).
var Default = sync.OnceValue(func() *Knowledge { return mustKnowledge(stretchYAML) })

func mustKnowledge(data []byte) *Knowledge {
	k, err := ParseKnowledge(data)
	if err != nil {
		panic("grants: stretch.yaml: " + err.Error())
	}
	return k
}

// ParseKnowledge reads a knowledge file; an unknown field or a bad
// operand rule is an error.
func ParseKnowledge(data []byte) (*Knowledge, error) {
	var k Knowledge
	if err := yaml.UnmarshalWithOptions(data, &k, yaml.Strict()); err != nil {
		return nil, err
	}
	for name, p := range k.Programs {
		switch p.Operands {
		case "":
			p.Operands = OperandsSame
			k.Programs[name] = p
		case OperandsSame, OperandsPaths, OperandsKind, OperandsAny:
		default:
			return nil, fmt.Errorf("program %s: operands %q is not same, paths, kind or any", name, p.Operands)
		}
	}
	for _, w := range k.Wrappers {
		if w.Name == "" || w.Targets < 0 {
			return nil, fmt.Errorf("a wrapper needs a name and targets ≥ 0")
		}
	}
	return &k, nil
}

func (k *Knowledge) wrapper(words []string) (Wrapper, bool) {
	for _, w := range k.Wrappers {
		if w.Name == words[0] && (w.Sub == "" || len(words) > 1 && words[1] == w.Sub) {
			return w, true
		}
	}
	return Wrapper{}, false
}

// command is a plain command as grants compare it.
type command struct {
	Wrappers []string // each wrapper's own words, as written
	Program  string
	Sub      string
	Options  []string // "-n" or "-n=value", in order
	Operands []string
}

const maxWrappers = 8

// parse reads words as wrappers around one command; false when the
// command cannot be followed (an exact-only program, a wrapper with no
// command, a shell line that is not one plain command).
func (k *Knowledge) parse(words []string) (command, bool) {
	var c command
	for depth := 0; ; depth++ {
		if len(words) == 0 || depth > maxWrappers {
			return command{}, false
		}
		w, ok := k.wrapper(words)
		if !ok {
			break
		}
		own, rest, ok := w.split(words)
		if !ok {
			return command{}, false
		}
		c.Wrappers = append(c.Wrappers, strings.Join(own, " "))
		if w.Shell {
			if words, ok = Words(strings.Join(rest, " ")); !ok {
				return command{}, false
			}
			continue
		}
		words = rest
	}
	if slices.Contains(k.ExactOnly, words[0]) || strings.Contains(words[0], "=") {
		return command{}, false
	}
	c.Program = words[0]
	p := k.program(c.Program)
	c.Options, c.Operands = p.split(words[1:])
	if p.Subcommands {
		if len(c.Operands) == 0 {
			return command{}, false
		}
		c.Sub, c.Operands = c.Operands[0], c.Operands[1:]
	}
	return c, true
}

func (k *Knowledge) program(name string) Program {
	if p, ok := k.Programs[name]; ok {
		return p
	}
	return Program{Operands: OperandsSame}
}

// split returns the wrapper's own words and the command it runs.
func (w Wrapper) split(words []string) (own, rest []string, ok bool) {
	i := 1
	if w.Sub != "" {
		i = 2
	}
	targets := 0
	for i < len(words) {
		a := words[i]
		switch {
		case a == "--" && w.Separator == "" && targets == w.Targets:
			i++
			return words[:i], words[i:], i < len(words)
		case a == w.Separator && w.Separator != "":
			if targets != w.Targets {
				return nil, nil, false
			}
			return words[:i+1], words[i+1:], i+1 < len(words)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			name, _, hasValue := strings.Cut(a, "=")
			if !hasValue && slices.Contains(w.ValueOptions, name) {
				i++
			}
			i++
		case w.Assignments && strings.Contains(a, "=") && !strings.HasPrefix(a, "="):
			i++
		case targets < w.Targets:
			targets++
			i++
		case w.Separator != "":
			return nil, nil, false // the command must follow the separator
		default:
			return words[:i], words[i:], true
		}
	}
	return nil, nil, false
}

// split sorts a program's arguments into options and operands.
func (p Program) split(args []string) (opts, operands []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return opts, append(operands, args[i+1:]...)
		case strings.HasPrefix(a, "--") || strings.HasPrefix(a, "-") && len(a) > 1 && (p.LongSingleDash || strings.Contains(a, "=")):
			if name, _, ok := strings.Cut(a, "="); !ok && slices.Contains(p.ValueOptions, name) && i+1 < len(args) {
				i++
				a = name + "=" + args[i]
			}
			opts = append(opts, a)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// -rf is -r -f; a value option takes the rest (-nprod) or
			// the next word.
		chars:
			for j := 1; j < len(a); j++ {
				name := "-" + a[j:j+1]
				if slices.Contains(p.ValueOptions, name) {
					switch {
					case j+1 < len(a):
						opts = append(opts, name+"="+a[j+1:])
					case i+1 < len(args):
						i++
						opts = append(opts, name+"="+args[i])
					default:
						opts = append(opts, name)
					}
					break chars
				}
				opts = append(opts, name)
			}
		default:
			operands = append(operands, a)
		}
	}
	return opts, operands
}

// harmless reports whether any program's harmless option n is harmless
// for program too (it does not list n as widening or a target).
func (k *Knowledge) harmless(program, n string) bool {
	p := k.program(program)
	_, widens := p.Widens[n]
	return slices.Contains(k.Harmless, n) && !widens && !slices.Contains(p.Target, n) && !slices.Contains(p.ValueOptions, n)
}

func optName(o string) string {
	n, _, _ := strings.Cut(o, "=")
	return n
}

// resolve makes a path operand absolute from cwd.
func resolve(p, cwd string) string {
	if !path.IsAbs(p) && cwd != "" {
		p = path.Join(cwd, p)
	}
	return path.Clean(p)
}

// within reports whether p is base or inside it.
func within(p, base string) bool {
	return p == base || base == "/" || strings.HasPrefix(p, base+"/")
}
