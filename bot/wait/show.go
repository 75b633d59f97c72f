package wait

import (
	"fmt"
	"strings"
	"time"

	"github.com/signoff/signoff/bot"
)

// Describe is a request whole, for a person deciding or looking back
// (`signoff show`): the action unabridged, its level and reasons, the
// persona and who may still answer, every vote (counted or ignored, why,
// which proof, what was said), where it was posted, and the time left or
// the decision. Outside text is escaped: it cannot move the cursor.
func Describe(r *bot.Request, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "request %s · persona %s · %s\n", r.ID, Clean(r.Persona), status(r, now))
	fmt.Fprintf(&b, "action (%s):\n", r.Kind)
	for _, line := range strings.Split(r.Action, "\n") {
		fmt.Fprintf(&b, "    %s\n", Escape(line))
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, "reason given: %s\n", Escape(r.Reason))
	}
	fmt.Fprintf(&b, "risk: %s\n", r.Level)
	for _, why := range r.Reasons {
		fmt.Fprintf(&b, "  - %s\n", Escape(why))
	}
	if e := r.Electorate; e != nil {
		fmt.Fprintf(&b, "who decides: owner %s", orNone(e.Owner))
		if len(e.Members) > 0 {
			fmt.Fprintf(&b, "; members %s (approvalQuorum %d, denyQuorum %d)", strings.Join(e.Members, ", "), e.ApprovalQuorum, e.DenyQuorum)
		}
		if e.Proof == bot.ProofSignedOnly {
			b.WriteString("; only signed votes count")
		}
		b.WriteString("\n")
		if r.Status == bot.Pending {
			fmt.Fprintf(&b, "needs: %s\n", e.Needs)
			if len(e.Undecided) > 0 {
				fmt.Fprintf(&b, "not yet answered: %s\n", strings.Join(e.Undecided, ", "))
			}
		}
	}
	fmt.Fprintf(&b, "votes (%d):\n", len(r.Votes))
	if len(r.Votes) == 0 {
		b.WriteString("  none yet\n")
	}
	for _, v := range r.Votes {
		who := v.Voter.String()
		if v.Name != "" {
			who = v.Name + " (" + who + ")"
		}
		fmt.Fprintf(&b, "  %s  %s %s · %s · proof %s", v.At.UTC().Format("15:04:05"), Escape(who), v.Choice, v.Result, v.Proof)
		if v.Why != "" {
			fmt.Fprintf(&b, ": %s", Escape(v.Why))
		}
		if v.Reason != "" {
			fmt.Fprintf(&b, " — said %q", Clean(v.Reason))
		}
		b.WriteString("\n")
	}
	b.WriteString("posted:\n")
	for _, m := range r.Messages {
		switch m.Platform {
		case bot.Nostr:
			fmt.Fprintf(&b, "  nostr event %s (signed by the gateway %s)\n", m.ID, orNone(r.GatewayKey))
		default:
			fmt.Fprintf(&b, "  %s channel %s message %s\n", m.Platform, Escape(m.Channel), Escape(m.ID))
		}
	}
	if r.Status.Final() {
		fmt.Fprintf(&b, "decision: %s\n", Escape(bot.Outcome(r)))
	}
	return b.String()
}

func status(r *bot.Request, now time.Time) string {
	if r.Status == bot.Pending {
		left := max(r.Deadline.Sub(now).Round(time.Second), 0)
		return fmt.Sprintf("pending, %s left (deadline %s)", left, r.Deadline.UTC().Format(time.RFC3339))
	}
	return string(r.Status)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Escape shows outside text on one line with nothing hidden: control
// characters, bidirectional overrides and invisible format characters are
// written as \x1b, \u202e …, so what a person reads is what was sent.
func Escape(s string) string { return bot.Escape(s) }
