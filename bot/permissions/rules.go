package permissions

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/signoff/signoff/bot"
)

// Problem is one thing wrong in a rule map, at a line and column.
type Problem struct {
	Line, Column int
	Message      string
}

// The tools a rule may name besides any tool's own name.
var (
	knownTools = map[string]bool{"*": true, "bash": true, "read": true, "edit": true, "write": true, "network": true}
	toolNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)
)

// MaxPattern bounds one rule's pattern.
const MaxPattern = 4096

// RulesFromNode reads a rule map: tool → effect (shorthand for the pattern
// "*") or tool → map of pattern → effect, in the order written. where
// prefixes each rule's Where ("file").
func RulesFromNode(file string, n ast.Node) ([]bot.Rule, []Problem) {
	var (
		rules []bot.Rule
		ps    []Problem
	)
	bad := func(n ast.Node, format string, args ...any) {
		l, c := pos(n)
		ps = append(ps, Problem{Line: l, Column: c, Message: fmt.Sprintf(format, args...)})
	}
	values, ok := mapping(n)
	if !ok {
		if _, null := n.(*ast.NullNode); n == nil || null {
			return nil, nil
		}
		bad(n, "permissions must be a map of tool to rules (bash: {\"git *\": allow})")
		return nil, ps
	}
	for _, v := range values {
		tool, ok := scalar(v.Key)
		switch {
		case !ok:
			bad(v.Key, "a tool name must be a plain value")
			continue
		case !knownTools[tool] && !toolNameRE.MatchString(tool):
			bad(v.Key, "tool %q: use *, bash, read, edit, write, network or a tool's name (mcp__github__create_issue)", tool)
			continue
		}
		if eff, ok := scalar(v.Value); ok {
			e, err := effect(eff)
			if err != nil {
				bad(v.Value, "%s: %v", tool, err)
				continue
			}
			rules = append(rules, bot.Rule{Tool: tool, Pattern: "*", Effect: e, Where: where(file, v.Value)})
			continue
		}
		pats, ok := mapping(v.Value)
		if !ok {
			bad(v.Value, "%s: give allow, deny or ask, or a map of pattern to allow, deny or ask", tool)
			continue
		}
		for _, pv := range pats {
			pat, ok := scalar(pv.Key)
			if !ok || strings.TrimSpace(pat) == "" {
				bad(pv.Key, "%s: a pattern must be a non-empty plain value (quote it: \"git *\")", tool)
				continue
			}
			if len(pat) > MaxPattern {
				bad(pv.Key, "%s: pattern longer than %d bytes", tool, MaxPattern)
				continue
			}
			s, ok := scalar(pv.Value)
			if !ok {
				bad(pv.Value, "%s %q: give allow, deny or ask", tool, pat)
				continue
			}
			e, err := effect(s)
			if err != nil {
				bad(pv.Value, "%s %q: %v", tool, pat, err)
				continue
			}
			rules = append(rules, bot.Rule{Tool: tool, Pattern: normalize(pat), Effect: e, Where: where(file, pv.Key)})
		}
	}
	return rules, ps
}

// WorkspacesFromNode reads `workspaces:`: absolute path glob → rule map.
func WorkspacesFromNode(file string, n ast.Node) ([]bot.Workspace, []Problem) {
	var (
		out []bot.Workspace
		ps  []Problem
	)
	values, ok := mapping(n)
	if !ok {
		if _, null := n.(*ast.NullNode); n == nil || null {
			return nil, nil
		}
		l, c := pos(n)
		return nil, []Problem{{l, c, "workspaces must be a map of absolute path glob to rules"}}
	}
	for _, v := range values {
		glob, ok := scalar(v.Key)
		if !ok || !path.IsAbs(glob) || strings.Contains(glob, "/../") || strings.HasSuffix(glob, "/..") {
			l, c := pos(v.Key)
			ps = append(ps, Problem{l, c, fmt.Sprintf("workspace %q must be an absolute path glob such as /home/alice/src/infra/**", glob)})
			continue
		}
		rules, rps := RulesFromNode(file, v.Value)
		ps = append(ps, rps...)
		out = append(out, bot.Workspace{Glob: glob, Rules: rules})
	}
	return out, ps
}

// MaxRepoFile caps a repository's .signoff/permissions.yaml.
const MaxRepoFile = 256 << 10

// ParseFile reads a repository rule file (.signoff/permissions.yaml): a
// rule map at the top level, the same shape as a persona's permissions.
func ParseFile(file string, data []byte) (rules []bot.Rule, ps []Problem) {
	if len(data) > MaxRepoFile {
		return nil, []Problem{{Message: fmt.Sprintf("file is larger than %d bytes", MaxRepoFile)}}
	}
	defer func() {
		if r := recover(); r != nil { // go-yaml panics on some malformed input
			rules, ps = nil, []Problem{{Message: fmt.Sprintf("the YAML cannot be read (%v)", r)}}
		}
	}()
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, []Problem{{Message: "not valid YAML: " + firstLine(err.Error())}}
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return nil, nil
	}
	if len(f.Docs) > 1 {
		return nil, []Problem{{Message: "one YAML document only"}}
	}
	return RulesFromNode(file, f.Docs[0].Body)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func effect(s string) (bot.Effect, error) {
	switch e := bot.Effect(strings.ToLower(strings.TrimSpace(s))); e {
	case bot.EffectAllow, bot.EffectDeny, bot.EffectAsk:
		return e, nil
	}
	return "", fmt.Errorf("%q is not allow, deny or ask", s)
}

func mapping(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}, true
	}
	return nil, false
}

func scalar(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.MappingKeyNode:
		return scalar(v.Value)
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value, true
	}
	return "", false
}

func pos(n ast.Node) (int, int) {
	if n == nil {
		return 0, 0
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line, tk.Position.Column
	}
	return 0, 0
}

func where(file string, n ast.Node) string {
	l, c := pos(n)
	if l == 0 {
		return file
	}
	return fmt.Sprintf("%s:%d:%d", file, l, c)
}

// normalize collapses runs of white space, so "git  push" and "git push"
// are one pattern.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// Match reports whether a wildcard pattern matches s: "*" matches any
// run of characters (slashes and spaces too), everything else is itself.
// A pattern ending in " *" also matches what comes before it alone
// ("git *" matches "git").
func Match(pattern, s string) bool {
	if strings.HasSuffix(pattern, " *") && s == strings.TrimSuffix(pattern, " *") {
		return true
	}
	return wildcard(pattern, s)
}

// wildcard is glob matching with * only, in linear time (the classic
// two-pointer backtrack: at most one pending star).
func wildcard(p, s string) bool {
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(p) && p[pi] == s[si]:
			pi++
			si++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// Exact reports whether a rule names one thing (no wildcard).
func Exact(r bot.Rule) bool { return !strings.Contains(r.Pattern, "*") }

// MatchPath matches an absolute path glob against a directory: "**"
// matches any number of path segments (none too), "*" within one.
func MatchPath(glob, dir string) bool {
	g := strings.Split(strings.Trim(path.Clean(glob), "/"), "/")
	d := strings.Split(strings.Trim(path.Clean(dir), "/"), "/")
	if path.Clean(dir) == "/" {
		d = nil
	}
	return matchSegments(g, d)
}

func matchSegments(g, d []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			for i := 0; i <= len(d); i++ {
				if matchSegments(g[1:], d[i:]) {
					return true
				}
			}
			return false
		}
		if len(d) == 0 || !wildcard(g[0], d[0]) {
			return false
		}
		g, d = g[1:], d[1:]
	}
	return len(d) == 0
}
