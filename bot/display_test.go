package bot_test

import (
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/signoff/signoff/bot"
)

// disguised is the example: the terminal would show "safe  ls -la"
// while the gateway holds rm -rf ~/work.
const disguised = "rm -rf ~/work # \x1b[27Dsafe \x1b[K \x1b[7C ls -la"

func TestEscapeShowsEverything(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{disguised, `rm -rf ~/work # \x1b[27Dsafe \x1b[K \x1b[7C ls -la`},
		{"a\x07b\x00c\x7fd", `a\x07b\x00c\x7fd`},
		{"safe\u202e fr- mr", `safe\u202e fr- mr`},
		{"x\u2066y\u2069\u200bz\ufeff", `x\u2066y\u2069\u200bz\ufeff`},
		{"c1\u0085\u009b31m", `c1\u0085\u009b31m`},
		{"one\ntwo\r\tthree", `one\ntwo\x0d\tthree`},
		{"plain ✅ é 中文", "plain ✅ é 中文"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"pua\ue000 unassigned\U000e0080", `pua\ue000 unassigned\ue0080`},
	} {
		if got := bot.Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := bot.EscapeLines("a\n\n\n\n\n\nb\r\n\x1b[2J"); got != "a\n\nb\n\\x1b[2J" {
		t.Errorf("EscapeLines = %q, want blank runs collapsed and ESC shown", got)
	}
}

// TestNostrNoteCannotHideTheRisk: the note's first line is the gateway's
// level and reasons; the agent's text comes after, escaped, and a screen of
// blank lines cannot push anything down.
func TestNostrNoteCannotHideTheRisk(t *testing.T) {
	r := &bot.Request{ID: "req1", Persona: "demo", Action: disguised + strings.Repeat("\n", 80) + "risk: safe", Reason: "tidy\u202e",
		Level: bot.Dangerous, Reasons: []string{"recursive delete of a home path"}, Deadline: time.Now()}
	note := bot.Summary(r)
	lines := strings.Split(note, "\n")
	if !strings.HasPrefix(lines[0], "⛔ approval needed · risk: dangerous (recursive delete") {
		t.Fatalf("first line %q, want the risk first", lines[0])
	}
	if strings.ContainsAny(note, "\x1b\u202e") || len(lines) > 6 {
		t.Fatalf("note keeps controls or the blank lines (%d lines):\n%s", len(lines), note)
	}
	if h := bot.Headline(r); !strings.HasPrefix(h, "⛔ approval needed (dangerous): rm -rf ~/work") || strings.ContainsAny(h, "\x1b\n") {
		t.Fatalf("headline %q", h)
	}
}

// FuzzEscape: whatever the agent writes, Escape leaves no character that
// acts on a display, and EscapeLines keeps only newlines, never three in a
// row.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{disguised, "\u202eabc", "a\n\n\n\nb", "\x00\x9b", "ok", "\xff\xfe", "\r\n\r\n\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{bot.Escape(s), bot.EscapeLines(s)} {
			for _, c := range out {
				if c == '\n' && out != bot.Escape(s) {
					continue
				}
				if unicode.IsControl(c) || unicode.Is(unicode.Bidi_Control, c) || unicode.Is(unicode.Cf, c) || c == '\u2028' || c == '\u2029' {
					t.Fatalf("Escape(%q) keeps %U", s, c)
				}
			}
		}
		if strings.Contains(bot.EscapeLines(s), "\n\n\n") {
			t.Fatalf("EscapeLines(%q) keeps three newlines", s)
		}
	})
}
