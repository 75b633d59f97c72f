package quorum

import (
	"sort"

	"github.com/signoff/signoff/bot"
)

// Role is what a voter is to a persona.
type Role string

const (
	Owner  Role = "owner"
	Member Role = "member"
	None   Role = "" // the agent itself, a stranger, or a vote without the proof required
)

// Voter is a judged voter: the person behind an identity and their role,
// or why their vote cannot count.
type Voter struct {
	Person string
	Role   Role
	Why    string // set when Role is None
}

// Judge says who id is to p and whether a vote with proof may count. The
// agent's own identities never count, whatever else the file says.
func Judge(p bot.Persona, id bot.Identity, proof bot.Proof) Voter {
	for _, a := range p.Agent {
		if a == id {
			return Voter{Why: "the agent's own identity never counts"}
		}
	}
	var v Voter
	switch {
	case p.Owner != nil && has(p.Owner.Identities, id):
		v = Voter{Person: p.Owner.Name, Role: Owner}
	default:
		for _, m := range p.Members {
			if has(m.Identities, id) {
				v = Voter{Person: m.Name, Role: Member}
				break
			}
		}
	}
	if v.Role == None {
		return Voter{Why: id.String() + " is not an owner or member of persona " + p.Name}
	}
	if p.Proof == bot.ProofSignedOnly && proof != bot.ProofSigned {
		return Voter{Person: v.Person, Why: "persona " + p.Name + " counts only votes signed with the voter's own key (proof: signed)"}
	}
	return v
}

func has(ids []bot.Identity, id bot.Identity) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Cast is one counted vote as the tally sees it.
type Cast struct {
	Person string
	Role   Role
	Choice bot.Choice
}

// Decision is the tally's answer.
type Decision struct {
	Status bot.Status // Pending, Approved or Denied
	By     []string   // the people whose votes decided, sorted
	// Grant is set on an approval whose deciding votes were all Always:
	// the owner's, or approvalQuorum members'. Fewer, or a mix with plain
	// approvals, approve once.
	Grant bool
	// Results says, vote by vote in the order given, which counted: a
	// vote is Ignored when its voter has no role, its answer is neither
	// approve nor deny, its person voted before, or it came after the
	// decision. The Lua script reports the same.
	Results []bot.Result
}

// Tally decides from counted votes in arrival order. A person's first
// vote stands; once decided, later votes change nothing. Always is an
// approval that also asks for a grant (see Decision.Grant). The owner decides
// alone; approvalQuorum distinct members approve (never when it is 0); any
// denyQuorum members deny. The Redis Lua script implements the same rules.
func Tally(p bot.Persona, votes []Cast) Decision {
	seen := map[string]bool{}
	var approvers, deniers []string
	always := 0
	dq := p.DenyQuorum
	if dq < 1 {
		dq = 1
	}
	results := make([]bot.Result, len(votes))
	for i := range results {
		results[i] = bot.Ignored
	}
	for i, v := range votes {
		if v.Role == None || seen[v.Person] || (v.Choice != bot.Approve && v.Choice != bot.Deny && v.Choice != bot.Always) {
			continue
		}
		seen[v.Person] = true
		results[i] = bot.Counted
		if v.Role == Owner {
			if v.Choice != bot.Deny {
				return Decision{Status: bot.Approved, By: []string{v.Person}, Grant: v.Choice == bot.Always, Results: results}
			}
			return Decision{Status: bot.Denied, By: []string{v.Person}, Results: results}
		}
		if v.Choice == bot.Deny {
			deniers = append(deniers, v.Person)
			if len(deniers) >= dq {
				return Decision{Status: bot.Denied, By: sorted(deniers), Results: results}
			}
			continue
		}
		approvers = append(approvers, v.Person)
		if v.Choice == bot.Always {
			always++
		}
		if p.ApprovalQuorum > 0 && len(approvers) >= p.ApprovalQuorum {
			return Decision{Status: bot.Approved, By: sorted(approvers), Grant: always >= p.ApprovalQuorum, Results: results}
		}
	}
	return Decision{Status: bot.Pending, Results: results}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
