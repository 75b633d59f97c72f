package redis

import (
	"strings"
	"testing"
)

// FuzzParseNotice: a notice is outside input (anyone who may publish on
// the server can send one). Parsing never panics; what it accepts prints
// back exactly as it came (nothing is read loosely); what it refuses
// carries at most the request it names, never a vote; and no vote notice
// carries a tag that a random key signs.
func FuzzParseNotice(f *testing.F) {
	line := "counted\n\n" + `{"voter":{"platform":"nostr","id":"ab"},"name":"bob","vote":"approve","proof":"","at":"2026-01-01T00:00:00Z"}`
	key := newNoticeKey()
	good := notice{kind: noticeVote, id: "abcdefghijklmnop", index: 3, line: line}
	good.tag = noticeTag(key, good.signed())
	for _, s := range []string{
		good.String(),
		"v\n" + strings.Repeat("0", 40) + "\nid\n1\nignored\nwhy\n{}",
		"v\n" + strings.Repeat("0", 40) + "\nid\n01\ncounted\n\n{}",
		"m\nabcdefghijklmnop\n2",
		"m\nid\n0",
		"c\nabcdefghijklmnop",
		"r\n" + strings.Repeat("a", 40) + "\nabcdefghijklmnop\n3\n1",
		"r\n" + strings.Repeat("a", 40) + "\nabcdefghijklmnop\n3",
		"r\nabcdefghijklmnop",
		"r\n",
		"c\n",
		"v\n",
		"",
		"abcdefghijklmnop",
	} {
		f.Add(s)
	}
	other := newNoticeKey()
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseNotice(s)
		if err != nil {
			if n.kind != "" || n.line != "" || n.tag != "" || n.index != 0 {
				t.Fatalf("parseNotice(%q) refused (%v) but returned %+v", s, err, n)
			}
			return
		}
		if got := n.String(); got != s {
			t.Fatalf("parseNotice(%q) = %+v, which prints as %q", s, n, got)
		}
		if n.kind == noticeVote && noticeTag(other, n.signed()) == n.tag {
			t.Fatalf("a random key signs %q", s)
		}
	})
}

func TestParseNoticeTakesWhatTheScriptsSend(t *testing.T) {
	line := "ignored\nnot an owner or member\n" + `{"voter":{"platform":"slack","id":"U1"},"vote":"approve","at":"2026-01-01T00:00:00Z"}`
	for _, tc := range []struct {
		msg  string
		want notice
	}{
		{"v\n" + strings.Repeat("a", 40) + "\nreq-1\n12\n" + line, notice{kind: noticeVote, id: "req-1", index: 12, tag: strings.Repeat("a", 40), line: line}},
		{"m\nreq-1\n3", notice{kind: noticeMessages, id: "req-1", index: 3}},
		{"c\nreq 1\nx", notice{kind: noticeChange, id: "req 1\nx"}},
		{"r\n" + strings.Repeat("b", 40) + "\nreq-1\n4\n0", notice{kind: noticeReceipt, id: "req-1", tag: strings.Repeat("b", 40), index: 4}},
	} {
		got, err := parseNotice(tc.msg)
		got.vote = tc.want.vote
		if err != nil || got != tc.want {
			t.Errorf("parseNotice(%q) = %+v, %v; want %+v", tc.msg, got, err, tc.want)
		}
	}
}
