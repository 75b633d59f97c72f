package netpolicy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// MaxPolicyFile caps a policy or boundary file's size (a few thousand
// entries; parsing stays well under a second).
const MaxPolicyFile = 256 << 10

// maxProblems stops a file's problems from being listed past this many.
const maxProblems = 50

// MaxEntries caps the entries of one policy.
const MaxEntries = 10000

// Problem is one thing wrong with a policy or boundary file, at a line.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"` // 0 when no line applies
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	loc := p.File
	if p.Line > 0 {
		loc += fmt.Sprintf(":%d:%d", p.Line, p.Column)
	}
	return loc + ": " + p.Message
}

// Problems is every problem found; it is the error Parse returns.
type Problems []Problem

func (ps Problems) Error() string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, "\n")
}

// Parse reads a policy file. Every problem is reported with its line; a
// policy with problems must not be used.
func Parse(file string, data []byte) (Policy, Problems) {
	var ps Problems
	bad := func(n *yaml.Node, format string, args ...any) {
		if len(ps) == maxProblems {
			ps = append(ps, Problem{File: file, Message: "too many problems; stopping here"})
		}
		if len(ps) > maxProblems {
			return
		}
		p := Problem{File: file, Message: fmt.Sprintf(format, args...)}
		if n != nil {
			p.Line, p.Column = n.Line, n.Column
		}
		ps = append(ps, p)
	}
	if len(data) > MaxPolicyFile {
		bad(nil, "file is larger than %d bytes", MaxPolicyFile)
		return Policy{}, ps
	}
	var doc yaml.Node
	if err := decodeOne(data, &doc); err != nil {
		ps = append(ps, yamlProblem(file, err))
		return Policy{}, ps
	}
	var pol Policy
	if doc.Kind == 0 { // an empty file: no doors
		return Policy{Hosts: []Entry{}}, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		bad(root, "a policy is a mapping with a hosts: list")
		return Policy{}, ps
	}
	pol.Hosts = []Entry{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "hosts" {
			bad(k, "unknown key %q (a policy has only hosts:)", clip(k.Value))
			continue
		}
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			continue
		}
		if v.Kind != yaml.SequenceNode {
			bad(v, "hosts: must be a list of entries")
			continue
		}
		if len(v.Content) > MaxEntries {
			bad(v, "hosts: has more than %d entries", MaxEntries)
			continue
		}
		seen := map[string]int{}
		for _, en := range v.Content {
			e, ok := parseEntry(en, bad)
			if !ok {
				continue
			}
			key := e.Key() + " " + strings.Join(e.Programs, ",")
			if line, dup := seen[key]; dup {
				bad(en, "%s is listed twice (first at line %d): widen that entry instead", e.Key(), line)
				continue
			}
			seen[key] = en.Line
			pol.Hosts = append(pol.Hosts, e)
		}
	}
	if len(ps) > 0 {
		return Policy{}, ps
	}
	return pol, nil
}

// decodeOne decodes exactly one YAML document.
func decodeOne(data []byte, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil { // the library's panics on odd input
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(n); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return fmt.Errorf("yaml: line %d: a policy file holds one document", extra.Line)
	}
	return nil
}

func yamlProblem(file string, err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	p := Problem{File: file, Message: msg}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ":"); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				p.Line, p.Column = n, 1
				p.Message = strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return p
}

var entryKeys = []string{"host", "port", "access", "methods", "paths", "programs"}

func parseEntry(n *yaml.Node, bad func(*yaml.Node, string, ...any)) (Entry, bool) {
	if n.Kind != yaml.MappingNode {
		bad(n, "an entry is a mapping: host, port, access (and methods, paths, programs)")
		return Entry{}, false
	}
	var (
		e        Entry
		ok       = true
		hostNode *yaml.Node
		seen     = map[string]bool{}
	)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !slices.Contains(entryKeys, k.Value) {
			bad(k, "unknown key %q in an entry (known: %s)", clip(k.Value), strings.Join(entryKeys, ", "))
			ok = false
			continue
		}
		if seen[k.Value] {
			bad(k, "%s is given twice", k.Value)
			ok = false
			continue
		}
		seen[k.Value] = true
		switch k.Value {
		case "host":
			hostNode = v
			if v.Kind != yaml.ScalarNode {
				bad(v, "host must be a name such as pypi.org or *.pypi.org")
				ok = false
				continue
			}
			h, err := NormalizePattern(v.Value)
			if err != nil {
				bad(v, "%v", err)
				ok = false
				continue
			}
			e.Host = h
		case "port":
			p, err := ParsePort(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil {
				bad(v, "port must be a number from 1 to 65535")
				ok = false
				continue
			}
			e.Port = p
		case "access":
			e.Access = Access(v.Value)
			if v.Kind != yaml.ScalarNode || e.Access != ReadOnly && e.Access != ReadWrite {
				bad(v, "access must be read-only or read-write")
				ok = false
			}
		case "methods", "paths", "programs":
			list, lok := stringList(v, k.Value, bad)
			if !lok {
				ok = false
				continue
			}
			switch k.Value {
			case "methods":
				e.Methods = list
			case "paths":
				e.Paths = list
			case "programs":
				e.Programs = list
			}
		}
	}
	for _, req := range []string{"host", "port", "access"} {
		if !seen[req] {
			bad(n, "entry has no %s", req)
			ok = false
		}
	}
	if !ok {
		return Entry{}, false
	}
	if err := e.Check(); err != nil {
		at := n
		if hostNode != nil {
			at = hostNode
		}
		bad(at, "%v", err)
		return Entry{}, false
	}
	return e, true
}

func stringList(v *yaml.Node, name string, bad func(*yaml.Node, string, ...any)) ([]string, bool) {
	if v.Kind != yaml.SequenceNode {
		bad(v, "%s must be a list", name)
		return nil, false
	}
	out := make([]string, 0, len(v.Content))
	for _, it := range v.Content {
		if it.Kind != yaml.ScalarNode || it.Value == "" {
			bad(it, "each of %s must be a non-empty string", name)
			return nil, false
		}
		out = append(out, it.Value)
	}
	if len(out) > 1000 {
		bad(v, "%s has more than 1000 items", name)
		return nil, false
	}
	return out, true
}
