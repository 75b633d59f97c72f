package nostr

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

func TestReplyTargetFollowsNIP10(t *testing.T) {
	a, b, c := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	for _, tc := range []struct {
		name string
		tags gonostr.Tags
		want string
	}{
		{"root only", gonostr.Tags{{"e", a, "", "root"}}, a},
		{"root and reply", gonostr.Tags{{"e", a, "", "root"}, {"e", b, "", "reply"}}, b},
		{"reply before root", gonostr.Tags{{"e", b, "", "reply"}, {"e", a, "", "root"}}, b},
		{"positional", gonostr.Tags{{"e", a}, {"e", c}}, c},
		{"mention only", gonostr.Tags{{"e", a, "", "mention"}}, ""},
		{"no e tag", gonostr.Tags{{"p", a}}, ""},
	} {
		if got := replyTarget(tc.tags); got != tc.want {
			t.Errorf("%s: target %q, want %q", tc.name, got, tc.want)
		}
	}
}

// FuzzParseReply: whatever a relay sends, parseReply either refuses it or
// returns a verified kind-1 reply to a 64-hex event with a bounded,
// valid-UTF-8 reason, and never panics.
func FuzzParseReply(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	k := signing.NewKey()
	target := strings.Repeat("ab", 32)
	for _, content := range []string{"❌ use the staging bucket", "deny: not on a Friday", "approve", "why?", ""} {
		ev := gonostr.Event{Kind: 1, CreatedAt: gonostr.Timestamp(now.Unix()), Content: content,
			Tags: gonostr.Tags{{"e", target, "", "root"}, {"p", k.PublicKey()}}}
		if err := k.Sign(&ev); err != nil {
			f.Fatal(err)
		}
		b, _ := ev.MarshalJSON()
		f.Add(b)
	}
	f.Add([]byte(`{"kind":1,"id":"","tags":[["e"]]}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := parseReply(raw, now)
		if err != nil {
			return
		}
		if r.Event.Kind != 1 || len(r.Target) != 64 || strings.ToLower(r.Target) != r.Target {
			t.Fatalf("accepted %+v", r)
		}
		if len(r.Reason) > signing.MaxVoteReason || !utf8.ValidString(r.Reason) {
			t.Fatalf("reason %q not bounded UTF-8", r.Reason)
		}
		if r.Choice != bot.Approve && r.Choice != bot.Deny && r.Choice != bot.Other {
			t.Fatalf("choice %v from a reply", r.Choice)
		}
		if !r.Event.CheckID() {
			t.Fatalf("accepted an event whose id does not match")
		}
	})
}
