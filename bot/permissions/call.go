package permissions

import (
	"bytes"
	"encoding/json"
	"net"
	"net/url"
	"path"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/signoff/signoff/bot"
)

// Call is one call normalized for the rules: the permission tool
// ("bash", "read", "edit", "write", "network" or the tool's own name),
// the tool's own name, and the subjects rules are matched against (the
// simple commands of a command line, the absolute paths, host:port, or
// the input JSON of any other tool).
type Call struct {
	Tool     string
	Name     string
	Line     string // bash: the whole command line
	Subjects []string
	Cwd      string
}

// toolKinds maps agents' tool names to permission tools; the field holds
// the path or command.
var toolKinds = map[string]struct{ tool, field string }{
	"Bash": {"bash", "command"}, "bash": {"bash", "command"}, "shell": {"bash", "command"},
	"Read": {"read", "file_path"}, "NotebookRead": {"read", "notebook_path"},
	"Glob": {"read", "path"}, "Grep": {"read", "path"}, "LS": {"read", "path"},
	"Edit": {"edit", "file_path"}, "MultiEdit": {"edit", "file_path"}, "NotebookEdit": {"edit", "notebook_path"},
	"Write":       {"write", "file_path"},
	"apply_patch": {"edit", "command"},
	"WebFetch":    {"network", "url"},
}

// CommandCall is a shell command line run in cwd.
func CommandCall(line, cwd string) Call {
	return Call{Tool: "bash", Name: "bash", Line: line, Subjects: SimpleCommands(line), Cwd: cwd}
}

// ToolCall is an agent's tool call. A shell tool becomes its command; a
// file tool its absolute path (relative ones taken from cwd); apply_patch
// the paths its patch touches; WebFetch host:port; any other tool its
// name, with its input JSON as the subject.
func ToolCall(name string, input json.RawMessage, cwd string) Call {
	k, known := toolKinds[name]
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(input, &fields)
	str := func(f string) string {
		var s string
		_ = json.Unmarshal(fields[f], &s)
		return s
	}
	if !known {
		var b bytes.Buffer
		if json.Compact(&b, input) != nil {
			b.Reset()
			b.Write(input)
		}
		return Call{Tool: name, Name: name, Subjects: []string{b.String()}, Cwd: cwd}
	}
	c := Call{Tool: k.tool, Name: name, Cwd: cwd}
	switch {
	case k.tool == "bash":
		c.Line = str(k.field)
		c.Subjects = SimpleCommands(c.Line)
	case name == "apply_patch":
		for _, p := range PatchPaths(str(k.field)) {
			c.Subjects = append(c.Subjects, absPath(p, cwd))
		}
	case k.tool == "network":
		c.Subjects = []string{hostPort(str(k.field))}
	default:
		p := str(k.field)
		if p == "" {
			p = cwd
		}
		c.Subjects = []string{absPath(p, cwd)}
	}
	if len(c.Subjects) == 0 {
		c.Subjects = []string{""}
	}
	return c
}

// NetworkCall is a destination, written host:port (a URL is read as one).
func NetworkCall(action string) Call {
	return Call{Tool: "network", Name: "network", Subjects: []string{hostPort(action)}}
}

// TextCall is free text an agent asked people about.
func TextCall(action string) Call {
	return Call{Tool: "text", Name: "text", Subjects: []string{strings.TrimSpace(action)}}
}

func absPath(p, cwd string) string {
	if p == "" {
		return ""
	}
	if !path.IsAbs(p) && cwd != "" {
		p = path.Join(cwd, p)
	}
	return path.Clean(p)
}

func hostPort(s string) string {
	s = strings.TrimSpace(s)
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443"}[u.Scheme]
		}
		return strings.ToLower(u.Hostname()) + ":" + port
	}
	if h, p, err := net.SplitHostPort(s); err == nil {
		return strings.ToLower(h) + ":" + p
	}
	return strings.ToLower(s)
}

// PatchPaths returns the files an apply_patch patch adds, updates,
// deletes or moves to, in order.
func PatchPaths(patch string) []string {
	var out []string
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		for _, h := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if p, ok := strings.CutPrefix(line, h); ok && strings.TrimSpace(p) != "" {
				out = append(out, strings.TrimSpace(p))
			}
		}
	}
	return out
}

// SimpleCommands splits a command line into the simple commands that
// would run (lists, pipelines, subshells, substitutions seen through),
// each printed on one line. A line that does not parse is one subject.
func SimpleCommands(line string) []string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return []string{normalize(line)}
	}
	var out []string
	pr := syntax.NewPrinter(syntax.Minify(false))
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		var b strings.Builder
		for i, w := range call.Args {
			if i > 0 {
				b.WriteByte(' ')
			}
			if lit, ok := literal(w); ok {
				b.WriteString(lit)
				continue
			}
			var wb bytes.Buffer
			_ = pr.Print(&wb, w)
			b.WriteString(wb.String())
		}
		out = append(out, normalize(b.String()))
		return true
	})
	if len(out) == 0 {
		return []string{normalize(line)}
	}
	return out
}

// literal returns a word with its quoting undone when it is static
// ('x', "x", a"b", \x), so "git" 'push' and \rm match as git push and rm.
func literal(w *syntax.Word) (string, bool) {
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return "", false
				}
			}
		default:
			return "", false
		}
	}
	s, err := expand.Literal(nil, w)
	return s, err == nil
}

// callOf builds the Call for a check.
func callOf(k bot.Kind, action, tool string, input json.RawMessage, cwd string) Call {
	switch {
	case tool != "":
		return ToolCall(tool, input, cwd)
	case k == bot.KindNetwork:
		return NetworkCall(action)
	case k == bot.KindText:
		return TextCall(action)
	}
	return CommandCall(action, cwd)
}
