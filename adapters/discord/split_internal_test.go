package discord

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSplitContent: the parts of a published text are each within
// Discord's limit, are whole UTF-8, and join to exactly the text.
func FuzzSplitContent(f *testing.F) {
	for _, s := range []string{"", "a", strings.Repeat("é", 4025), strings.Repeat("word ", 900), strings.Repeat("x", 2001) + "\n" + strings.Repeat("y", 3000)} {
		f.Add(s, 2000)
	}
	f.Add("ab cd ef", 3)
	f.Fuzz(func(t *testing.T, text string, n int) {
		if n < 1 || n > 5000 || !utf8.ValidString(text) {
			return
		}
		parts := splitContent(text, n)
		if strings.Join(parts, "") != text {
			t.Fatalf("parts do not join to the text")
		}
		for i, p := range parts {
			if c := utf8.RuneCountInString(p); c > n || !utf8.ValidString(p) || (c == 0 && len(parts) > 1) {
				t.Fatalf("part %d: %d runes (limit %d), valid %v", i, c, n, utf8.ValidString(p))
			}
		}
	})
}
