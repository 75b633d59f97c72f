package bot

import (
	"fmt"
	"strings"
	"time"
)

// HowToAnswer is the line every posted request carries.
const HowToAnswer = "react ✅ to approve, ❌ to deny"

// Headline is the ⛔ line shown everywhere a request is posted: the
// gateway's level first, then the agent's text, escaped.
func Headline(r *Request) string {
	s := "⛔ approval needed (" + levelText(r.Level) + "): " + Escape(r.Action)
	if r.Reason != "" {
		s += " — " + Escape(r.Reason)
	}
	return s
}

func levelText(l Level) string {
	if l == "" {
		return "unknown risk"
	}
	return string(l)
}

// Outcome is the line a decided request's messages are edited to show:
// "✅ approved by alice, bob", "❌ denied by carol: reason", "⌛ expired".
func Outcome(r *Request) string {
	var s string
	switch r.Status {
	case Approved:
		s = "✅ approved"
	case Denied:
		s = "❌ denied"
	case Expired:
		s = "⌛ expired"
	case Withdrawn:
		s = "↩ withdrawn"
	default:
		return "⏳ pending"
	}
	if len(r.DecidedBy) > 0 {
		s += " by " + strings.Join(r.DecidedBy, ", ")
	}
	if r.DecidedAt != nil {
		s += " at " + r.DecidedAt.UTC().Format(time.RFC3339)
	}
	if r.DecisionReason != "" && len(r.DecidedBy) == 0 {
		s += ": " + r.DecisionReason
	}
	if said := VoteReasons(r); said != "" {
		s += " — " + said
	}
	return s
}

// VoteReasons is what the counted voters said with their votes:
// `carol: "use the staging bucket"`, joined with "; ".
func VoteReasons(r *Request) string {
	var out []string
	for _, v := range r.Votes {
		if v.Result != Counted || v.Reason == "" {
			continue
		}
		name := v.Name
		if name == "" {
			name = v.Voter.String()
		}
		out = append(out, fmt.Sprintf("%s: %q", name, v.Reason))
	}
	return strings.Join(out, "; ")
}

// Summary is a multi-line plain-text body for a request (the Nostr note):
// level and reasons first, then the agent's action and reason (escaped, on
// lines of their own), how to answer, persona and deadline.
func Summary(r *Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "⛔ approval needed · risk: %s", levelText(r.Level))
	if len(r.Reasons) > 0 {
		reasons := make([]string, len(r.Reasons))
		for i, why := range r.Reasons {
			reasons[i] = Escape(why)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(reasons, "; "))
	}
	fmt.Fprintf(&b, "\naction: %s", Escape(r.Action))
	if r.Reason != "" {
		fmt.Fprintf(&b, "\nreason: %s", Escape(r.Reason))
	}
	b.WriteString("\n")
	b.WriteString(HowToAnswer)
	fmt.Fprintf(&b, "\npersona: %s · request %s · deadline %s", Escape(r.Persona), r.ID, r.Deadline.UTC().Format(time.RFC3339))
	return b.String()
}

// ParseChoice reads a reaction: ✅ or + approves, ❌ or - denies, ♾️
// approves and asks for a grant, anything
// else is Other. Emoji variation selectors and Slack/Discord names are
// accepted too.
func ParseChoice(s string) Choice {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\ufe0f", ""))
	switch s {
	// "+" is not here: NIP-25 clients send it as a plain like, so it is
	// recorded and ignored (issue 9, attack 8).
	case "✅", "✔", "☑", "white_check_mark", "heavy_check_mark", "approve":
		return Approve
	case "❌", "✖", "❎", "-", "x", "negative_squared_cross_mark", "deny":
		return Deny
	case "♾", "infinity", "always":
		return Always
	}
	return Other
}
