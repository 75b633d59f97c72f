package risk

import (
	"fmt"
	"path"
	"strings"
)

type anchor uint8

const (
	anchorNone anchor = iota // relative: the workspace
	anchorRoot               // /
	anchorHome               // ~, $HOME, /home/NAME, /Users/NAME, /root
)

// pathPattern is a rules path: anchored at / or ~, or matching path
// components anywhere.
type pathPattern struct {
	anchor anchor
	comps  []string
	globs  []bool // comps[i] holds a wildcard (patterns only; nil: unknown)
}

func compilePaths(ps []string, where string) ([]pathPattern, error) {
	out := make([]pathPattern, 0, len(ps))
	for _, p := range ps {
		if p == "" {
			return nil, fmt.Errorf("%s: empty path", where)
		}
		pp := splitPath(p)
		for _, c := range pp.comps {
			if _, err := path.Match(c, ""); err != nil {
				return nil, fmt.Errorf("%s: bad pattern %q", where, p)
			}
		}
		if len(pp.comps) == 0 {
			return nil, fmt.Errorf("%s: pattern %q would match every path under it", where, p)
		}
		g := make([]bool, len(pp.comps))
		for i, c := range pp.comps {
			g[i] = hasGlobEsc(c)
		}
		out = append(out, pathPattern{pp.anchor, pp.comps, g})
	}
	return out, nil
}

// splitPath turns a path (as word text) into an anchor and cleaned
// components; ".." that cannot be resolved stays.
func splitPath(p string) pathPattern { return splitPathBuf(p, nil) }

// splitPathBuf is splitPath appending the components to buf (a caller's
// stack buffer keeps a lookup from allocating).
func splitPathBuf(p string, buf []string) pathPattern {
	var a anchor
	switch {
	case strings.HasPrefix(p, "~"):
		a = anchorHome
		if i := strings.IndexByte(p, '/'); i >= 0 {
			p = p[i+1:]
		} else {
			p = ""
		}
	case strings.HasPrefix(p, "/"):
		a = anchorRoot
		p = p[1:]
	}
	comps := buf[:0]
	for p != "" {
		var c string
		if i := strings.IndexByte(p, '/'); i >= 0 {
			c, p = p[:i], p[i+1:]
		} else {
			c, p = p, ""
		}
		switch c {
		case "", ".":
			continue
		case "..":
			if len(comps) > 0 && comps[len(comps)-1] != ".." {
				comps = comps[:len(comps)-1]
				continue
			}
			if a != anchorNone && len(comps) == 0 {
				if a == anchorHome {
					// ~/.. is outside home: the root of the tree.
					a = anchorRoot
				}
				continue
			}
		}
		comps = append(comps, c)
	}
	if a == anchorRoot && len(comps) > 0 {
		switch comps[0] {
		case "home", "Users":
			if len(comps) >= 2 {
				a, comps = anchorHome, comps[2:]
			}
		case "root":
			a, comps = anchorHome, comps[1:]
		}
	}
	return pathPattern{anchor: a, comps: comps}
}

// matches reports whether path p is the pattern's path or lies inside it.
func (pt *pathPattern) matches(p *pathPattern) bool {
	n := len(pt.comps)
	if pt.anchor != anchorNone {
		if p.anchor != pt.anchor || len(p.comps) < n {
			return false
		}
		return pt.compsMatch(p.comps[:n])
	}
	for i := 0; i+n <= len(p.comps); i++ {
		if pt.compsMatch(p.comps[i : i+n]) {
			return true
		}
	}
	return false
}

func (pt *pathPattern) compsMatch(comps []string) bool {
	if pt.globs == nil {
		return compsMatch(pt.comps, comps)
	}
	for i, pc := range pt.comps {
		c := comps[i]
		if pc == c {
			continue
		}
		if !pt.globs[i] && strings.IndexByte(c, '*') < 0 && strings.IndexByte(c, '?') < 0 && strings.IndexByte(c, '[') < 0 {
			return false // two plain names, and they differ
		}
		if !compMatch(pc, c) {
			return false
		}
	}
	return true
}

func compsMatch(pat, comps []string) bool {
	for i, pc := range pat {
		if !compMatch(pc, comps[i]) {
			return false
		}
	}
	return true
}

// compMatch: the pattern component matches the path component; a path
// component that is itself a glob matches when it could name the
// pattern's literal (but, as in the shell, a glob not starting with a dot
// does not match dotfiles).
func compMatch(pc, c string) bool {
	if pc == c {
		return true
	}
	patGlob := hasGlobEsc(pc)
	if !patGlob && !hasGlob(c) {
		return false // two plain names, and they differ
	}
	// (components hold no slash: nameMatch is path.Match)
	if patGlob && nameMatch(pc, c) {
		return true
	}
	if hasGlob(c) && !hasGlob(pc) {
		if strings.HasPrefix(pc, ".") && !strings.HasPrefix(c, ".") {
			return false
		}
		if nameMatch(c, pc) {
			return true
		}
	}
	return false
}

func anyMatch(ps []pathPattern, p *pathPattern) bool {
	for i := range ps {
		if ps[i].matches(p) {
			return true
		}
	}
	return false
}

// fragment returns the longest literal run of a pattern: any path the
// pattern matches, written without wildcards, contains it.
func (pt *pathPattern) fragment() string {
	best := ""
	for _, c := range pt.comps {
		for _, f := range strings.FieldsFunc(c, func(r rune) bool { return r == '*' || r == '?' || r == '[' || r == ']' }) {
			if len(f) > len(best) {
				best = f
			}
		}
	}
	return best
}

// sensitive reports whether the path text names a secret.
func (r *Rules) sensitive(text string) bool {
	if text == "" || text == unknownMark {
		return false
	}
	if !hasGlob(text) {
		var cand [16]fragHit
		if n, ok := r.fragGate.candidates(text, cand[:]); ok {
			return r.sensitiveGated(text, cand[:n], 0)
		}
	}
	return r.sensitiveAll(text)
}

// sensitiveGated is sensitive for a path without wildcards, given the
// patterns whose literal fragment the text (or the text it is a suffix
// of, from offset off) holds: a path without wildcards names a secret
// only if it holds some pattern's literal fragment, so only those
// patterns are tried.
func (r *Rules) sensitiveGated(text string, cand []fragHit, off int) bool {
	if text == "" || text == unknownMark {
		return false
	}
	var buf [16]string
	var p pathPattern
	split := false
	for _, c := range cand {
		if c.pos < off {
			continue // the fragment starts before this suffix
		}
		if !split {
			p, split = splitPathBuf(text, buf[:0]), true
			if len(p.comps) == 0 {
				return false
			}
		}
		if r.sensPaths[c.idx].matches(&p) {
			last := pathPattern{anchor: anchorNone, comps: p.comps[len(p.comps)-1:]}
			return !anyMatch(r.notSens, &last)
		}
	}
	return false
}

// sensitiveAll tries every sensitive pattern.
func (r *Rules) sensitiveAll(text string) bool {
	var buf [16]string
	p := splitPathBuf(text, buf[:0])
	if len(p.comps) == 0 {
		return false
	}
	if !anyMatch(r.sensPaths, &p) {
		return false
	}
	last := pathPattern{anchor: anchorNone, comps: p.comps[len(p.comps)-1:]}
	return !anyMatch(r.notSens, &last)
}

// sensitiveArg checks an argument as a path, and the parts of it that may
// be paths: the value after '=' (--file=x, if=x), after a leading '@'
// (curl -d @x) and after a host ':' (scp host:x). Every part is a suffix
// of the argument, so one pass finds the literal fragments for them all.
func (r *Rules) sensitiveArg(t string) (string, bool) {
	var cand [16]fragHit
	n, gated := 0, false
	if !hasGlob(t) {
		n, gated = r.fragGate.candidates(t, cand[:])
		if gated && n == 0 {
			return "", false // no literal in t, no secret in any part
		}
	}
	full := t
	sens := func(part string) bool {
		if gated {
			return r.sensitiveGated(part, cand[:n], len(full)-len(part))
		}
		return r.sensitive(part)
	}
	if sens(t) {
		return t, true
	}
	if i := strings.IndexByte(t, '='); i >= 0 {
		t = t[i+1:]
		if sens(t) {
			return t, true
		}
	}
	if strings.HasPrefix(t, "@") {
		t = t[1:]
		if sens(t) {
			return t, true
		}
	}
	if i := strings.IndexByte(t, ':'); i > 0 && !strings.ContainsRune(t[:i], '/') && sens(t[i+1:]) {
		return t[i+1:], true
	}
	return "", false
}

// writeReason says why a write to the path text is dangerous ("" if it
// is not), and whether it is harmless (/dev/null).
func (r *Rules) writeReason(text string) (reason string, harmless bool) {
	if text == "" {
		return "", false
	}
	var buf [16]string
	p := splitPathBuf(text, buf[:0])
	if anyMatch(r.harmless, &p) {
		return "", true
	}
	if r.sensitive(text) {
		return "writes to a sensitive path (" + shorten(text) + ")", false
	}
	var folded *pathPattern
	for i := range r.writeBad {
		g := &r.writeBad[i]
		q := &p
		if g.fold {
			if folded == nil {
				f := splitPath(strings.ToLower(text))
				folded = &f
			}
			q = folded
		}
		if anyMatch(g.paths, q) {
			return withID(g.reason, g.id), false
		}
	}
	return "", false
}

// deleteTarget classifies a target of a deleting command: 0 ordinary (in
// the workspace), 1 broad (root, home, ., .., wildcard, unknown), 2 an
// absolute path outside the workspace.
func deleteTarget(w word) int {
	if w.glob || strings.Contains(w.text, unknownMark) || w.text == "{}" {
		return 1
	}
	if w.text == "" {
		return 0
	}
	var buf [16]string
	p := splitPathBuf(w.text, buf[:0])
	switch p.anchor {
	case anchorRoot:
		if len(p.comps) <= 1 {
			return 1
		}
		return 2
	case anchorHome:
		if len(p.comps) == 0 {
			return 1
		}
		return 2
	}
	if len(p.comps) == 0 || p.comps[0] == ".." {
		return 1
	}
	return 0
}

// shorten keeps reasons readable when a path is huge or holds unknown parts.
func shorten(s string) string {
	s = strings.ReplaceAll(s, unknownMark, "$…")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// fragIndex is the keyword gate for sensitive paths: it finds whether a
// text holds any of a set of literals in one pass over the text, by the
// literals' first two bytes (two table lookups, no hashing).
type fragIndex struct {
	all    bool        // a literal shorter than two bytes: every text passes
	first  [256]uint16 // a literal starts with this byte: 1 + its row in second
	second [][256]uint16
	lists  [][]frag // second[row][b]-1: the literals starting with those two bytes
}

type frag struct {
	text string
	idx  int // the pattern it belongs to
}

// fragHit is a pattern whose literal a text holds, and where it starts.
type fragHit struct {
	idx, pos int
}

func newFragIndex(frags []string) fragIndex {
	var x fragIndex
	for i, f := range frags {
		if len(f) < 2 {
			x.all = true
			continue
		}
		if x.first[f[0]] == 0 {
			x.second = append(x.second, [256]uint16{})
			x.first[f[0]] = uint16(len(x.second))
		}
		row := &x.second[x.first[f[0]]-1]
		if row[f[1]] == 0 {
			x.lists = append(x.lists, nil)
			row[f[1]] = uint16(len(x.lists))
		}
		l := row[f[1]] - 1
		x.lists[l] = append(x.lists[l], frag{f, i})
	}
	return x
}

// candidates writes the patterns whose literal the text holds into buf;
// false when they do not fit (or every text passes).
func (x *fragIndex) candidates(text string, buf []fragHit) (int, bool) {
	if x.all {
		return 0, false
	}
	n := 0
	for i := 0; i+1 < len(text); i++ {
		row := x.first[text[i]]
		if row == 0 {
			continue
		}
		l := x.second[row-1][text[i+1]]
		if l == 0 {
			continue
		}
		for _, f := range x.lists[l-1] {
			if strings.HasPrefix(text[i:], f.text) {
				if n == len(buf) {
					return n, false
				}
				buf[n] = fragHit{f.idx, i}
				n++
			}
		}
	}
	return n, true
}

// hasGlob reports whether s holds *, ? or [ — strings.ContainsAny(s,
// "*?[") in one pass (ContainsAny scans short strings once per character).
func hasGlob(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[':
			return true
		}
	}
	return false
}

// hasGlobEsc is hasGlob that also counts a backslash.
func hasGlobEsc(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			return true
		}
	}
	return false
}
