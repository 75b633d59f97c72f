package risk

import (
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// unknownMark stands in a word's text for a part the classifier cannot
// know (a variable, a substitution).
const unknownMark = "\x00"

// word is what the classifier knows of a shell word.
type word struct {
	// text is the word after quote removal, with $HOME written "~" and
	// each unknowable part written unknownMark.
	text string
	// static: the word has no expansions; text is exactly what runs.
	static bool
	// glob: unquoted wildcard or brace-expansion characters.
	glob bool
	// subst: the word holds a command or process substitution.
	subst bool
}

func viewWord(w *syntax.Word) word {
	if w == nil {
		return word{static: true}
	}
	if len(w.Parts) == 1 {
		if l, ok := w.Parts[0].(*syntax.Lit); ok && !strings.ContainsAny(l.Value, "\\*?[{") {
			return word{text: l.Value, static: true}
		}
	}
	v := word{static: true}
	var b strings.Builder
	for _, p := range w.Parts {
		v.part(&b, p, false)
	}
	v.text = b.String()
	return v
}

func (v *word) part(b *strings.Builder, p syntax.WordPart, quoted bool) {
	switch x := p.(type) {
	case *syntax.Lit:
		if quoted {
			unescapeDbl(b, x.Value)
		} else {
			if unescapeLit(b, x.Value) {
				v.glob = true
			}
		}
	case *syntax.SglQuoted:
		if x.Dollar {
			s, err := expand.Literal(nil, &syntax.Word{Parts: []syntax.WordPart{x}})
			if err != nil {
				v.static = false
				b.WriteString(unknownMark)
				return
			}
			b.WriteString(s)
			return
		}
		b.WriteString(x.Value)
	case *syntax.DblQuoted:
		for _, q := range x.Parts {
			v.part(b, q, true)
		}
	case *syntax.ParamExp:
		v.static = false
		if x.Param != nil && (x.Param.Value == "HOME") && x.Exp == nil && x.Repl == nil && x.Slice == nil && x.Index == nil && !x.Length && !x.Excl {
			b.WriteString("~")
			return
		}
		b.WriteString(unknownMark)
	case *syntax.CmdSubst, *syntax.ProcSubst:
		v.static = false
		v.subst = true
		b.WriteString(unknownMark)
	case *syntax.ExtGlob:
		v.glob = true
		v.static = false
		b.WriteString(unknownMark)
	default: // ArithmExp, BraceExp and anything newer
		v.static = false
		b.WriteString(unknownMark)
	}
}

// unescapeLit removes backslash escapes from an unquoted literal and
// reports whether it holds unescaped glob or brace-expansion characters.
func unescapeLit(b *strings.Builder, s string) (glob bool) {
	brace := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					b.WriteByte(s[i])
				}
			}
			continue
		}
		switch c {
		case '*', '?':
			glob = true
		case '[':
			if strings.IndexByte(s[i+1:], ']') >= 0 {
				glob = true
			}
		case '{':
			brace = true
		case ',':
			if brace {
				glob = true
			}
		case '.':
			if brace && i+1 < len(s) && s[i+1] == '.' {
				glob = true
			}
		}
		b.WriteByte(c)
	}
	return glob
}

// unescapeDbl removes the backslash escapes that double quotes honour.
func unescapeDbl(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
				b.WriteByte(s[i])
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
}

// hasSubst reports whether a word may hold a command or process
// substitution (anything beyond plain literals and quotes).
func hasSubst(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return true
				}
			}
		default:
			return true
		}
	}
	return false
}
