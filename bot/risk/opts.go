package risk

import "strings"

// optSet is a set of command-line options: single letters (-f), long
// names (--force) and single-dash long names (-auto-approve, +o).
type optSet struct {
	short [128]bool
	long  []string // with the leading dashes
	exact []string // single-dash long names and +x forms
	any   bool
}

func newOptSet(names []string) optSet {
	var s optSet
	for _, n := range names {
		s.any = true
		switch {
		case len(n) == 2 && n[0] == '-' && n[1] != '-' && n[1] < 128:
			s.short[n[1]] = true
		case strings.HasPrefix(n, "--"):
			s.long = append(s.long, n)
		default:
			s.exact = append(s.exact, n)
		}
	}
	return s
}

// hasExact reports whether the whole word (up to '=') is one of the
// single-dash long names.
func (s *optSet) hasExact(t string) bool {
	if i := strings.IndexByte(t, '='); i > 0 {
		t = t[:i]
	}
	for _, e := range s.exact {
		if e == t {
			return true
		}
	}
	return false
}

// hasLong reports whether name (--x, no value) is one of the long names.
func (s *optSet) hasLong(name string) bool {
	for _, l := range s.long {
		if l == name {
			return true
		}
	}
	return false
}

// matchLong reports whether name (--x, no value) names one of the long
// options, also as an abbreviation of at least 3 characters (getopt_long
// and git accept unambiguous prefixes).
func (s *optSet) matchLong(name string) bool {
	for _, l := range s.long {
		if l == name || (len(name) >= 3 && strings.HasPrefix(l, name)) {
			return true
		}
	}
	return false
}

// opt is one option found in a word.
type opt struct {
	name  string // "-f", "--force", "-auto-approve"
	value string // attached value (-uroot, --user=root)
	has   bool   // value attached
	next  bool   // takes the next word as its value
	short byte   // the letter, for short options
}

// isOption reports whether t looks like an option word.
func isOption(t string) bool {
	return len(t) > 1 && (t[0] == '-' || t[0] == '+') && t != "--"
}

// eachOpt calls fn for every option in the option word t. takesArg says
// whether an option consumes a value; a short option that does ends the
// cluster (its value is the rest of the word, or the next word).
func eachOpt(t string, takesArg func(o opt) bool, exact func(string) bool, fn func(o opt)) (next bool) {
	if t[0] == '-' && len(t) > 2 && t[1] != '-' && !isShortCluster(t) && !exact(t) {
		// letters then an option that takes a value glued to it:
		// env -S'rm -rf /', env -iS'…'
		for i := 1; i < len(t); i++ {
			c := t[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				break
			}
			o := opt{name: shortName(c), short: c}
			if takesArg(o) {
				for j := 1; j < i; j++ {
					fn(opt{name: shortName(t[j]), short: t[j]})
				}
				o.value, o.has = strings.TrimPrefix(t[i+1:], "="), true
				fn(o)
				return false
			}
		}
	}
	if t[0] == '+' || exact(t) || (t[0] == '-' && len(t) > 2 && t[1] != '-' && !isShortCluster(t)) {
		o := opt{name: t}
		if i := strings.IndexByte(t, '='); i > 0 {
			o.name, o.value, o.has = t[:i], t[i+1:], true
		}
		if !o.has && takesArg(o) {
			o.next = true
		}
		fn(o)
		return o.next
	}
	if strings.HasPrefix(t, "--") {
		o := opt{name: t}
		if i := strings.IndexByte(t, '='); i > 0 {
			o.name, o.value, o.has = t[:i], t[i+1:], true
		}
		if !o.has && takesArg(o) {
			o.next = true
		}
		fn(o)
		return o.next
	}
	for i := 1; i < len(t); i++ {
		c := t[i]
		o := opt{name: shortName(c), short: c}
		if takesArg(o) {
			if i+1 < len(t) {
				o.value, o.has = strings.TrimPrefix(t[i+1:], "="), true
			} else {
				o.next = true
			}
			fn(o)
			return o.next
		}
		fn(o)
	}
	return false
}

// isShortCluster: every byte is a letter, digit or one of a few option
// characters, so "-rf" is a cluster but "-auto-approve" is a single name.
func isShortCluster(t string) bool {
	for i := 1; i < len(t); i++ {
		c := t[i]
		if c == '-' || c == '=' {
			return false
		}
	}
	return true
}

var shortNames = func() (n [256]string) {
	for i := range n {
		n[i] = "-" + string(rune(i))
	}
	return
}()

func shortName(c byte) string { return shortNames[c] }

// takes returns a takesArg function for a set.
func (s *optSet) takes(o opt) bool {
	if o.short != 0 {
		return o.short < 128 && s.short[o.short]
	}
	if strings.HasPrefix(o.name, "--") {
		return s.hasLong(o.name)
	}
	return s.hasExact(o.name)
}

// has reports whether option o is in the set (long names by abbreviation).
func (s *optSet) has(o *opt) bool {
	if o.short != 0 {
		return o.short < 128 && s.short[o.short]
	}
	if strings.HasPrefix(o.name, "--") {
		return s.matchLong(o.name)
	}
	return s.hasExact(o.name)
}
