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
			// a fresh Config: with nil, expand mutates a shared one (a data race)
			s, err := expand.Literal(&expand.Config{}, &syntax.Word{Parts: []syntax.WordPart{x}})
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

// plainWords splits a command that is one simple command of plain words
// so that the parser, which would give the same words, is skipped: words
// of letters, digits and - _ . / : , @ % + = * ?, or quoted with '…' or
// "…" (no $, ` or \ inside), separated by single spaces. Unquoted * and ?
// make a word a glob, as the parser would. Anything else — expansions,
// operators, redirections, brackets, a reserved word or an assignment
// first — reports false, and the parser reads the command.
func plainWords(cmd string, args []word) ([]word, bool) {
	if cmd == "" || len(cmd) > 512 {
		return nil, false
	}
	var b strings.Builder
	cur := word{static: true}
	quotedAny := false
	inWord := false
	start := 0      // where the current word starts in cmd
	copied := false // the word has quotes: its text is in b
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		if !inWord {
			start = i
		}
		switch plainClass[c] {
		case plainWordByte:
			j := i + 1
			for j < len(cmd) && plainClass[cmd[j]] == plainWordByte {
				j++
			}
			if copied {
				b.WriteString(cmd[i:j])
			}
			inWord = true
			i = j - 1
		case plainGlobByte:
			if copied {
				b.WriteByte(c)
			}
			cur.glob = true
			inWord = true
		case plainQuoteByte:
			j := strings.IndexByte(cmd[i+1:], c)
			if j < 0 {
				return nil, false
			}
			q := cmd[i+1 : i+1+j]
			for k := 0; k < len(q); k++ {
				switch x := q[k]; {
				case x < 0x20 || x > 0x7e:
					return nil, false // control bytes and non-ASCII: the parser decides
				case x == '$' || x == '`' || x == '[':
					return nil, false // a[$(cmd)] is for the parser's checks
				case c == '"' && (x == '\\' || x == '!'):
					return nil, false
				}
			}
			if !copied {
				b.Reset()
				b.WriteString(cmd[start:i])
				copied = true
			}
			b.WriteString(q)
			quotedAny = true
			inWord = true
			i += j + 1
		case plainSpaceByte:
			if !inWord || i == len(cmd)-1 || cmd[i+1] == ' ' {
				return nil, false
			}
			if copied {
				cur.text = b.String()
			} else {
				cur.text = cmd[start:i]
			}
			args = append(args, cur)
			b.Reset()
			cur = word{static: true}
			inWord, copied = false, false
		default:
			return nil, false
		}
	}
	if !inWord {
		return nil, false
	}
	if copied {
		cur.text = b.String()
	} else {
		cur.text = cmd[start:]
	}
	args = append(args, cur)
	first := args[0].text
	if quotedAny && (strings.ContainsAny(cmd[:min(len(cmd), len(first)+2)], "'\"")) {
		return nil, false // a quoted command name: let the parser decide
	}
	if strings.IndexByte(first, '=') >= 0 || isReserved(first) || args[0].glob {
		return nil, false
	}
	return args, true
}

// plainClass sorts bytes for plainWords: letters, digits and
// - _ . / : , @ % + = are word bytes, * and ? glob bytes.
const (
	plainOther uint8 = iota
	plainWordByte
	plainGlobByte
	plainQuoteByte
	plainSpaceByte
)

var plainClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = plainWordByte
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = plainWordByte
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = plainWordByte
	}
	for _, c := range "-_./:,@%+=" {
		t[c] = plainWordByte
	}
	t['*'], t['?'] = plainGlobByte, plainGlobByte
	t['\''], t['"'] = plainQuoteByte, plainQuoteByte
	t[' '] = plainSpaceByte
	return t
}()

// isReserved: bash's reserved words and the declaration builtins the
// parser gives their own syntax.
func isReserved(s string) bool {
	switch s {
	case "if", "then", "else", "elif", "fi", "for", "while", "until",
		"do", "done", "case", "esac", "function", "select", "time",
		"coproc", "in", "!", "{", "}", "[[", "]]",
		"declare", "local", "export", "readonly", "typeset", "nameref", "let":
		return true
	}
	return false
}
