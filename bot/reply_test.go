package bot_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/signoff/signoff/bot"
)

func TestParseReply(t *testing.T) {
	for _, tc := range []struct {
		in     string
		choice bot.Choice
		reason string
	}{
		{"❌ use the staging bucket", bot.Deny, "use the staging bucket"},
		{"deny: not on a Friday", bot.Deny, "not on a Friday"},
		{"Approve, ship it", bot.Approve, "ship it"},
		{"✅️", bot.Approve, ""},
		{"✅ — go", bot.Approve, "go"},
		{"x marks the spot", bot.Other, "x marks the spot"},
		{"- see below", bot.Other, "- see below"},
		{"approvers are busy", bot.Other, "approvers are busy"},
		{"  ", bot.Other, ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			c, r := bot.ParseReply(tc.in)
			if c != tc.choice || r != tc.reason {
				t.Errorf("ParseReply(%q) = %s %q, want %s %q", tc.in, c, r, tc.choice, tc.reason)
			}
		})
	}
}

func FuzzParseReply(f *testing.F) {
	for _, s := range []string{"❌ use staging", "deny:", "approve,x", "✅️", "", "\xff\xfe", "denyish"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, r := bot.ParseReply(s)
		if c != bot.Approve && c != bot.Deny && c != bot.Other {
			t.Fatalf("choice %q", c)
		}
		if len(r) > len(s) {
			t.Fatalf("reason longer than the reply")
		}
		if c == bot.Other && r != strings.TrimSpace(s) {
			t.Fatalf("a remark must keep its text")
		}
		if utf8.ValidString(s) && !utf8.ValidString(r) {
			t.Fatalf("reason not UTF-8")
		}
	})
}
