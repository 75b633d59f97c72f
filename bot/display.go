package bot

import (
	"fmt"
	"strings"
	"unicode"
)

// Escape is agent text as a person is shown it on one line, with nothing
// hidden: C0 and C1 controls (ESC, BEL, NUL, CR, LF, TAB …), DEL, bidi
// overrides, isolates and marks, line and paragraph separators and other
// invisible format characters are written as visible escapes (\x1b, \n,
// \u202e), so an action cannot repaint itself ("rm -rf ~ ESC[27D safe")
// or reorder what is read. Every display of agent text goes through it or
// EscapeLines: CLI lines and tables, every platform's card, the Nostr note.
func Escape(s string) string { return escape(s, false) }

// EscapeLines is Escape for text shown on several lines: newlines are
// kept, but never more than one blank line in a row, so text cannot push
// what follows it (the risk line) off the screen.
func EscapeLines(s string) string {
	out := escape(strings.ReplaceAll(s, "\r\n", "\n"), true)
	for strings.Contains(out, "\n\n\n") {
		out = strings.ReplaceAll(out, "\n\n\n", "\n\n")
	}
	return out
}

func escape(s string, keepNewlines bool) string {
	clean := true
	for _, c := range s {
		if hidden(c) {
			clean = false
			break
		}
	}
	if clean && strings.ToValidUTF8(s, "") == s && (keepNewlines || !strings.Contains(s, "\n")) {
		return s
	}
	var b strings.Builder
	for _, c := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case c == '\n' && keepNewlines:
			b.WriteRune(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x80 && hidden(c):
			fmt.Fprintf(&b, `\x%02x`, c)
		case hidden(c):
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// hidden reports a character that would act on a display rather than be
// seen: controls, bidi controls and format characters (Cf), separators;
// and anything else not graphic (private use, unassigned code points,
// which a later Unicode or a terminal may give a meaning).
func hidden(c rune) bool {
	return unicode.IsControl(c) || unicode.Is(unicode.Bidi_Control, c) || unicode.Is(unicode.Cf, c) ||
		c == '\u2028' || c == '\u2029' || !unicode.IsGraphic(c)
}
