package wait_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/wait"
)

func team() bot.Persona {
	return bot.Persona{Name: "team", Owner: &bot.Person{Name: "alice"},
		Members: []bot.Person{{Name: "bob"}, {Name: "carol"}, {Name: "dave"}}, ApprovalQuorum: 2}
}

func TestLine(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	votes := []bot.Vote{
		{Name: "bob", Choice: bot.Approve, Result: bot.Counted, Reason: "looks fine"},
		{Voter: bot.Identity{Platform: bot.Nostr, ID: "ff"}, Choice: bot.Approve, Result: bot.Ignored},
	}
	r := &bot.Request{Deadline: now.Add(4*time.Minute + 10*time.Second), Votes: votes, Electorate: bot.ElectorateOf(team(), votes)}
	got := wait.Line(r, now)
	want := `waiting: 1 vote (bob approve: "looks fine"), 1 ignored · needs the owner (alice), or 1 more of: carol, dave · 4m10s left`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	r.Deadline = now.Add(-time.Second)
	if got := wait.Line(r, now); !strings.HasSuffix(got, "· 0s left") {
		t.Errorf("past the deadline: %s", got)
	}
}

// TestVoterReasonCannotMoveTheCursor: a reason with escape sequences and
// newlines is shown on one line, inert.
func TestVoterReasonCannotMoveTheCursor(t *testing.T) {
	votes := []bot.Vote{{Name: "bob", Choice: bot.Deny, Result: bot.Counted, Reason: "no\r\x1b[2K✅ approved by alice\nx"}}
	got := wait.Votes(&bot.Request{Votes: votes})
	if strings.ContainsAny(got, "\r\n\x1b") {
		t.Errorf("control characters reach the terminal: %q", got)
	}
}

func TestPlainDisplayPrintsOnChangeOnly(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	d := wait.New(&buf, false)
	d.Now = func() time.Time { return now }
	r := &bot.Request{Deadline: now.Add(time.Minute)}
	d.Update(r)
	d.Update(r)
	now = now.Add(10 * time.Second)
	d.Update(r)
	r2 := &bot.Request{Deadline: r.Deadline, Votes: []bot.Vote{{Name: "bob", Choice: bot.Approve, Result: bot.Counted}}}
	d.Update(r2)
	now = now.Add(wait.PlainEvery)
	d.Update(r2)
	d.Stop()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{"waiting: 0 votes · 1m0s left", "waiting: 1 vote (bob approve) · 50s left", "waiting: 1 vote (bob approve) · 20s left"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("got %q\nwant %q", lines, want)
	}
}

func TestElectorate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     bot.Persona
		votes []bot.Vote
		want  string
	}{
		{"owner only", bot.Persona{Owner: &bot.Person{Name: "alice"}}, nil, "the owner (alice)"},
		{"quorum", team(), nil, "the owner (alice), or 2 more of: bob, carol, dave"},
		{"one in", team(), []bot.Vote{{Name: "carol", Choice: bot.Approve, Result: bot.Counted}}, "the owner (alice), or 1 more of: bob, dave"},
		{"ignored votes do not count", team(), []bot.Vote{{Name: "carol", Choice: bot.Approve, Result: bot.Ignored}}, "the owner (alice), or 2 more of: bob, carol, dave"},
		{"no owner", bot.Persona{Members: []bot.Person{{Name: "bob"}}, ApprovalQuorum: 2}, nil, "no one left who can approve it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bot.ElectorateOf(tc.p, tc.votes).Needs; got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestInvisibleCharactersInANameAreShown: a zero-width space or a
// right-to-left override in a voter's name is written out (\u200b,
// \u202e), not passed to the terminal where it would hide or reorder text.
func TestInvisibleCharactersInANameAreShown(t *testing.T) {
	votes := []bot.Vote{{Name: "bob\u200b\u202e", Choice: bot.Approve, Result: bot.Counted}}
	got := wait.Votes(&bot.Request{Votes: votes})
	if strings.ContainsAny(got, "\u200b\u202e") || !strings.Contains(got, `\u200b`) || !strings.Contains(got, `\u202e`) {
		t.Errorf("invisible characters not shown: %q", got)
	}
}

func TestCleanCutsAt200Runes(t *testing.T) {
	got := wait.Clean(strings.Repeat("é", 250))
	if got != strings.Repeat("é", 200)+"…" {
		t.Errorf("Clean of 250 runes = %d runes", len([]rune(got)))
	}
	if got := wait.Clean(strings.Repeat("\x1b", 300)); !strings.HasPrefix(got, `\x1b`) || !strings.HasSuffix(got, `\x1b…`) {
		t.Errorf("Clean cut an escape: %q", got[len(got)-12:])
	}
}
