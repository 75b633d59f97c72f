package quorum_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/quorum"
	"github.com/signoff/signoff/quorum/quorumtest"
)

// TestScenarios runs the shared quorum table against the pure tally. A
// delivery seen before is a duplicate (the store's job, modelled here so the
// rows stay one table); every other ballot is judged and tallied.
func TestScenarios(t *testing.T) {
	for _, sc := range quorumtest.Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			if sc.Timed() {
				t.Skip("depends on the deadline; the tally has no clock (run against the stores)")
			}
			var (
				casts   []quorum.Cast
				index   = make([]int, len(sc.Ballots)) // ballot → cast, -1 for duplicates
				seenKey = map[string]bool{}
			)
			for i, b := range sc.Ballots {
				if b.DedupKey != "" && seenKey[b.DedupKey] {
					index[i] = -1
					continue
				}
				seenKey[b.DedupKey] = b.DedupKey != ""
				v := quorum.Judge(sc.Persona, b.Voter, b.ProofOf())
				index[i] = len(casts)
				casts = append(casts, quorum.Cast{Person: v.Person, Role: v.Role, Choice: b.Choice})
			}
			d := quorum.Tally(sc.Persona, casts)
			if d.Status != sc.Want.Status {
				t.Errorf("status = %s, want %s", d.Status, sc.Want.Status)
			}
			if !slices.Equal(d.By, sc.Want.DecidedBy) {
				t.Errorf("decided by = %v, want %v", d.By, sc.Want.DecidedBy)
			}
			if d.Grant != sc.Grant {
				t.Errorf("grant = %v, want %v", d.Grant, sc.Grant)
			}
			if len(d.Results) != len(casts) {
				t.Fatalf("%d results for %d votes", len(d.Results), len(casts))
			}
			for i, b := range sc.Ballots {
				got := bot.Duplicate
				if index[i] >= 0 {
					got = d.Results[index[i]]
				}
				if got != b.Want {
					t.Errorf("ballot %d (%s %s) = %s, want %s", i+1, b.Voter, b.Choice, got, b.Want)
				}
			}
		})
	}
}

func TestJudge(t *testing.T) {
	p := quorumtest.Persona(2, 1)
	signedOnly := p
	signedOnly.Proof = bot.ProofSignedOnly
	agentOwner := p
	agentOwner.Owner = &bot.Person{Name: "alice", Identities: []bot.Identity{quorumtest.Agent}}
	tests := []struct {
		name    string
		p       bot.Persona
		id      bot.Identity
		proof   bot.Proof
		want    quorum.Voter
		wantWhy string
	}{
		{"owner", p, quorumtest.Alice, bot.ProofSigned, quorum.Voter{Person: "alice", Role: quorum.Owner}, ""},
		{"owner on slack", p, quorumtest.AliceSlack, bot.ProofPlatform, quorum.Voter{Person: "alice", Role: quorum.Owner}, ""},
		{"member", p, quorumtest.Carol, bot.ProofSigned, quorum.Voter{Person: "carol", Role: quorum.Member}, ""},
		{"member's second identity", p, quorumtest.BobSlack, bot.ProofPlatform, quorum.Voter{Person: "bob", Role: quorum.Member}, ""},
		{"stranger", p, quorumtest.Mallory, bot.ProofSigned, quorum.Voter{}, "is not an owner or member of persona demo"},
		{"same id on another platform is a stranger", p, bot.Identity{Platform: bot.Discord, ID: quorumtest.Alice.ID}, bot.ProofPlatform, quorum.Voter{}, "is not an owner or member"},
		{"agent", p, quorumtest.Agent, bot.ProofSigned, quorum.Voter{}, "the agent's own identity never counts"},
		{"agent listed as owner", agentOwner, quorumtest.Agent, bot.ProofSigned, quorum.Voter{}, "the agent's own identity never counts"},
		{"signed only, platform proof", signedOnly, quorumtest.AliceSlack, bot.ProofPlatform, quorum.Voter{Person: "alice"}, "proof: signed"},
		{"signed only, signed proof", signedOnly, quorumtest.Alice, bot.ProofSigned, quorum.Voter{Person: "alice", Role: quorum.Owner}, ""},
		{"no owner", bot.Persona{Name: "x"}, quorumtest.Alice, bot.ProofSigned, quorum.Voter{}, "is not an owner or member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := quorum.Judge(tt.p, tt.id, tt.proof)
			if got.Person != tt.want.Person || got.Role != tt.want.Role {
				t.Errorf("Judge = {%q %q}, want {%q %q}", got.Person, got.Role, tt.want.Person, tt.want.Role)
			}
			if tt.wantWhy == "" && got.Why != "" {
				t.Errorf("why = %q, want none", got.Why)
			}
			if tt.wantWhy != "" && !strings.Contains(got.Why, tt.wantWhy) {
				t.Errorf("why = %q, want it to contain %q", got.Why, tt.wantWhy)
			}
		})
	}
}
