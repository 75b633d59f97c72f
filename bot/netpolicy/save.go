package netpolicy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"gopkg.in/yaml.v3"
)

// EditFile returns the policy file data with d let through, as Derive
// would on the file's own policy, written in the style of the file's
// entries with its comments kept. The result is parsed and checked (it
// must be valid, let d through and stay inside b) before it is returned;
// on any error nothing should be written. An already allowed d returns
// data unchanged.
func EditFile(file string, data []byte, d Dest, b *Boundary) ([]byte, Change, error) {
	pol, ps := Parse(file, data)
	if len(ps) > 0 {
		return nil, Change{}, fmt.Errorf("the policy file already has problems; fix them first:\n%w", ps)
	}
	want, ch := Derive(pol, d)
	if ch.Kind == AlreadyAllowed {
		return data, ch, nil
	}
	var doc yaml.Node
	if err := decodeOne(data, &doc); err != nil {
		return nil, ch, err
	}
	var prefix []byte // a file of comments only is kept as it is, above the new list
	if doc.Kind == 0 || len(doc.Content) == 0 {
		prefix = data
		if len(prefix) > 0 && prefix[len(prefix)-1] != '\n' {
			prefix = append(prefix, '\n')
		}
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	root := doc.Content[0]
	seq := hostsNode(root)
	style := styleOf(seq)
	switch ch.Kind {
	case Added:
		seq.Content = append(seq.Content, entryNode(ch.Entry, style))
		if seq.Style == yaml.FlowStyle && len(seq.Content) == 1 {
			seq.Style = 0
		}
	case Widened:
		setEntry(seq.Content[ch.Index], ch.Entry, style)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(style.indent)
	if err := enc.Encode(&doc); err != nil {
		return nil, ch, fmt.Errorf("write policy: %w", err)
	}
	enc.Close()
	out := append(prefix, buf.Bytes()...)
	got, ps := Parse(file, out)
	if len(ps) > 0 {
		return nil, ch, fmt.Errorf("the edited file would not be valid:\n%w", ps)
	}
	if _, ok := got.Allows(d); !ok {
		return nil, ch, fmt.Errorf("the edited file would not let %s through", Describe(d))
	}
	if lines := Diff(want, got); len(lines) > 0 {
		return nil, ch, fmt.Errorf("the edited file differs from the rule to add: %v", lines)
	}
	if !b.Allows(ch.Entry.Host, ch.Entry.Port) {
		return nil, ch, b.Outside(ch.Entry.Key())
	}
	return out, ch, nil
}

// CheckCopy checks an edited copy of the policy for --policy-from: valid,
// letting d through, and every entry it adds or changes from current
// inside b.
func CheckCopy(file string, data []byte, current Policy, d Dest, b *Boundary) (Policy, error) {
	pol, ps := Parse(file, data)
	if len(ps) > 0 {
		return Policy{}, ps
	}
	if _, ok := pol.Allows(d); !ok {
		return Policy{}, fmt.Errorf("%s does not let the request through (%s)", file, Describe(d))
	}
	if err := b.CheckPolicy(NewEntries(current, pol)); err != nil {
		return Policy{}, err
	}
	return pol, nil
}

// WriteFileAtomic replaces path with data: a temporary file in the same
// folder renamed over it, so a reader never sees half a policy.
func WriteFileAtomic(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".policy-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

type fileStyle struct {
	indent   int
	lists    yaml.Style // flow or block, as the file's entries write lists
	hostQuot yaml.Style
}

func styleOf(seq *yaml.Node) fileStyle {
	st := fileStyle{indent: 2, lists: yaml.FlowStyle}
	for _, en := range seq.Content {
		if en.Kind != yaml.MappingNode {
			continue
		}
		if en.Column > 3 && seq.Line < en.Line {
			st.indent = en.Column - 3
		}
		for i := 0; i+1 < len(en.Content); i += 2 {
			k, v := en.Content[i], en.Content[i+1]
			if k.Value == "host" {
				st.hostQuot = v.Style
			}
			if v.Kind == yaml.SequenceNode {
				st.lists = v.Style & yaml.FlowStyle
			}
		}
		break
	}
	if st.indent < 2 || st.indent > 8 {
		st.indent = 2
	}
	return st
}

// hostsNode returns the hosts: list of root, adding it when missing.
func hostsNode(root *yaml.Node) *yaml.Node {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "hosts" {
			v := root.Content[i+1]
			if v.Kind != yaml.SequenceNode { // hosts: (null)
				*v = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", HeadComment: v.HeadComment, LineComment: v.LineComment}
			}
			return v
		}
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "hosts"}, seq)
	return seq
}

func scalar(v string, style yaml.Style) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Style: style}
}

func listNode(items []string, style yaml.Style) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: style}
	for _, it := range items {
		st := yaml.Style(0)
		if it != "" && (it[0] == '*' || it[0] == '/' && bytes.ContainsAny([]byte(it), "*")) {
			st = yaml.DoubleQuotedStyle
		}
		n.Content = append(n.Content, scalar(it, st))
	}
	return n
}

func hostScalar(h string, st fileStyle) *yaml.Node {
	style := st.hostQuot
	if h[0] == '*' && style == 0 {
		style = yaml.DoubleQuotedStyle // a plain * would start an alias
	}
	return scalar(h, style)
}

// entryNode writes e as the file writes its entries.
func entryNode(e Entry, st fileStyle) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	add := func(k string, v *yaml.Node) { n.Content = append(n.Content, scalar(k, 0), v) }
	add("host", hostScalar(e.Host, st))
	add("port", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(e.Port)})
	add("access", scalar(string(e.Access), 0))
	if len(e.Methods) > 0 {
		add("methods", listNode(e.Methods, st.lists))
	}
	if len(e.Paths) > 0 {
		add("paths", listNode(e.Paths, st.lists))
	}
	if len(e.Programs) > 0 {
		add("programs", listNode(e.Programs, st.lists))
	}
	return n
}

// setEntry changes an entry node in place to e, keeping the comments on
// the keys it keeps.
func setEntry(n *yaml.Node, e Entry, st fileStyle) {
	want := map[string]*yaml.Node{
		"access": scalar(string(e.Access), 0),
	}
	lists := map[string][]string{"methods": e.Methods, "paths": e.Paths, "programs": e.Programs}
	var content []*yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		seen[k.Value] = true
		if w, ok := want[k.Value]; ok {
			v.Value, v.Style, v.Tag = w.Value, w.Style, w.Tag
		}
		if items, ok := lists[k.Value]; ok {
			if len(items) == 0 {
				continue // the list is gone: every method, path or program
			}
			style := v.Style & yaml.FlowStyle
			nv := listNode(items, style)
			nv.LineComment, nv.HeadComment, nv.FootComment = v.LineComment, v.HeadComment, v.FootComment
			v = nv
		}
		content = append(content, k, v)
	}
	for _, k := range []string{"methods", "paths", "programs"} {
		if !seen[k] && len(lists[k]) > 0 {
			content = append(content, scalar(k, 0), listNode(lists[k], st.lists))
		}
	}
	n.Content = content
}
