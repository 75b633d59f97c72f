package permissions

import (
	"fmt"
	"strings"
)

// Text is the decision for a person: the decision and why, the level and
// its reasons, the rule or grant, the mode; with layers, every layer of
// rules and what it said (permissions explain).
func (r *Result) Text(layers bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s — %s\n", r.Decision, r.Why)
	fmt.Fprintf(&b, "level: %s", r.Level)
	if len(r.Reasons) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(r.Reasons, "; "))
	}
	b.WriteString("\n")
	if layers {
		b.WriteString("layers, highest precedence first (a repository file only tightens):\n")
		for _, l := range r.Layers {
			fmt.Fprintf(&b, "  %s: ", l.Name)
			if l.Rule == nil {
				b.WriteString("no rule matched")
			} else {
				b.WriteString(ruleText(*l.Rule))
				if l.Exact {
					b.WriteString(" [exact]")
				}
			}
			if l.Note != "" {
				b.WriteString(" — " + l.Note)
			}
			b.WriteString("\n")
		}
	}
	if r.Rule != "" {
		fmt.Fprintf(&b, "rule: %s\n", r.Rule)
	} else if layers {
		b.WriteString("rule: none (decided by level)\n")
	}
	if r.Grant != "" {
		fmt.Fprintf(&b, "grant: %s\n", r.Grant)
	} else if layers {
		b.WriteString("grant: none covers this call\n")
	}
	if r.Review != nil {
		fmt.Fprintf(&b, "reviewer: %s", r.Review.Verdict)
		if r.Review.Reason != "" {
			b.WriteString(" — " + r.Review.Reason)
		}
		if r.Review.Error != "" {
			b.WriteString(" (" + r.Review.Error + ")")
		}
		b.WriteString("\n")
	}
	if layers && r.GrantScope != nil {
		fmt.Fprintf(&b, "♾️ would grant: %s, for %s\n", r.GrantScope.Text(), r.GrantScope.TTL)
	}
	fmt.Fprintf(&b, "mode: %s\n", r.Mode)
	return b.String()
}
