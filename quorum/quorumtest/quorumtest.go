// Package quorumtest holds the one table of quorum scenarios that the pure
// tally (quorum.Judge + quorum.Tally) and the Redis store (its Lua script)
// must both pass. It is imported only by tests.
package quorumtest

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/signoff/signoff/bot"
)

// Scenario is a persona, the ballots that arrive in order, and what must
// become of each and of the request.
type Scenario struct {
	Name    string
	Persona bot.Persona
	Ballots []Ballot
	// Expire resolves the request as expired after the ballots, as the
	// sweeper does when the deadline passes. Only a store can run it.
	Expire bool
	Want   Want
	// Grant: approved by an electorate that answered ♾️ and could have
	// approved on its own, so a "don't ask again" grant is made.
	Grant bool
}

// Timed reports whether the scenario depends on the deadline, which the
// pure tally knows nothing about.
func (s Scenario) Timed() bool {
	if s.Expire {
		return true
	}
	for _, b := range s.Ballots {
		if b.Late {
			return true
		}
	}
	return false
}

// Ballot is one vote arriving, and what must become of it.
type Ballot struct {
	Voter  bot.Identity
	Choice bot.Choice
	Proof  bot.Proof // empty: ProofPlatform for Slack/Discord, ProofSigned for Nostr
	// DedupKey names the delivery; empty means a delivery of its own.
	DedupKey string
	// Late ballots arrive after the deadline.
	Late bool
	Want bot.Result
}

// Want is the request's end state.
type Want struct {
	Status    bot.Status
	DecidedBy []string // sorted, as Request.DecidedBy
}

// ProofOf returns the ballot's proof, defaulting by platform.
func (b Ballot) ProofOf() bot.Proof {
	if b.Proof != "" {
		return b.Proof
	}
	if b.Voter.Platform == bot.Nostr {
		return bot.ProofSigned
	}
	return bot.ProofPlatform
}

// NostrID is a fixed Nostr identity for name (a hex key derived from it).
func NostrID(name string) bot.Identity {
	h := sha256.Sum256([]byte("quorumtest:" + name))
	return bot.Identity{Platform: bot.Nostr, ID: hex.EncodeToString(h[:])}
}

// SlackID is a Slack identity.
func SlackID(id string) bot.Identity { return bot.Identity{Platform: bot.Slack, ID: id} }

// The cast of the scenarios.
var (
	Alice      = NostrID("alice") // owner
	AliceSlack = SlackID("U01ALICE")
	Bob        = NostrID("bob") // members
	BobSlack   = SlackID("U02BOB")
	Carol      = NostrID("carol")
	Dave       = NostrID("dave")
	Agent      = NostrID("agent")
	AgentSlack = SlackID("U0AGENT")
	Mallory    = NostrID("mallory") // a stranger
)

// Persona returns a persona with owner alice (nostr + slack), members bob
// (nostr + slack), carol and dave, the agent's two identities, and the
// given quorums.
func Persona(approvalQuorum, denyQuorum int) bot.Persona {
	return bot.Persona{
		Name:           "demo",
		Agent:          []bot.Identity{Agent, AgentSlack},
		Owner:          &bot.Person{Name: "alice", Identities: []bot.Identity{Alice, AliceSlack}},
		Members:        Members(),
		ApprovalQuorum: approvalQuorum,
		DenyQuorum:     denyQuorum,
		Proof:          bot.ProofAny,
		Timeout:        bot.DefaultTimeout,
	}
}

// Members are bob, carol and dave.
func Members() []bot.Person {
	return []bot.Person{
		{Name: "bob", Identities: []bot.Identity{Bob, BobSlack}},
		{Name: "carol", Identities: []bot.Identity{Carol}},
		{Name: "dave", Identities: []bot.Identity{Dave}},
	}
}

func with(p bot.Persona, f func(*bot.Persona)) bot.Persona {
	f(&p)
	return p
}

func vote(id bot.Identity, c bot.Choice, want bot.Result) Ballot {
	return Ballot{Voter: id, Choice: c, Want: want}
}

const (
	approve = bot.Approve
	always  = bot.Always
	deny    = bot.Deny
	counted = bot.Counted
	ignored = bot.Ignored
)

// Scenarios is the table. Every row runs against the pure tally (unless
// Timed) and against every store.
var Scenarios = []Scenario{
	{
		Name:    "owner's always approves and grants",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Alice, always, counted)},
		Want:    Want{bot.Approved, []string{"alice"}},
		Grant:   true,
	},
	{
		Name:    "a quorum of members' always grants",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Bob, always, counted), vote(Carol, always, counted)},
		Want:    Want{bot.Approved, []string{"bob", "carol"}},
		Grant:   true,
	},
	{
		Name:    "always and approve from a quorum approve once, no grant",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Bob, always, counted), vote(Carol, approve, counted)},
		Want:    Want{Status: bot.Approved, DecidedBy: []string{"bob", "carol"}},
	},
	{
		Name:    "fewer than a quorum's always decide nothing",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Bob, always, counted)},
		Want:    Want{Status: bot.Pending},
	},
	{
		Name:    "a member's always then the owner's approve: approved once",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Bob, always, counted), vote(Alice, approve, counted)},
		Want:    Want{Status: bot.Approved, DecidedBy: []string{"alice"}},
	},
	{
		Name:    "a member's always with no member quorum grants nothing",
		Persona: Persona(0, 1),
		Ballots: []Ballot{vote(Bob, always, counted), vote(Carol, always, counted)},
		Want:    Want{Status: bot.Pending},
	},
	{
		Name:    "a stranger's always is ignored",
		Persona: Persona(1, 1),
		Ballots: []Ballot{vote(Mallory, always, ignored), vote(Agent, always, ignored)},
		Want:    Want{Status: bot.Pending},
	},
	{
		Name:    "always after a deny changes nothing",
		Persona: Persona(1, 1),
		Ballots: []Ballot{vote(Bob, deny, counted), vote(Alice, always, ignored)},
		Want:    Want{Status: bot.Denied, DecidedBy: []string{"bob"}},
	},
	{
		Name:    "owner alone approves",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Alice, approve, counted)},
		Want:    Want{bot.Approved, []string{"alice"}},
	},
	{
		Name:    "owner alone denies",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Alice, deny, counted)},
		Want:    Want{bot.Denied, []string{"alice"}},
	},
	{
		Name:    "owner on slack approves",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(AliceSlack, approve, counted)},
		Want:    Want{bot.Approved, []string{"alice"}},
	},
	{
		Name:    "2 of 3 members approve",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Carol, approve, counted), vote(Bob, approve, counted)},
		Want:    Want{bot.Approved, []string{"bob", "carol"}},
	},
	{
		Name:    "1 member approve with quorum 2 stays pending",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Bob, approve, counted)},
		Want:    Want{bot.Pending, nil},
	},
	{
		Name:    "approvalQuorum 0: members cannot approve",
		Persona: Persona(0, 1),
		Ballots: []Ballot{vote(Bob, approve, counted), vote(Carol, approve, counted), vote(Dave, approve, counted)},
		Want:    Want{bot.Pending, nil},
	},
	{
		Name:    "approvalQuorum 0: owner still approves after members",
		Persona: Persona(0, 1),
		Ballots: []Ballot{vote(Bob, approve, counted), vote(Alice, approve, counted)},
		Want:    Want{bot.Approved, []string{"alice"}},
	},
	{
		Name:    "member veto",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Bob, approve, counted), vote(Dave, deny, counted), vote(Carol, approve, ignored)},
		Want:    Want{bot.Denied, []string{"dave"}},
	},
	{
		Name:    "denyQuorum 2 needs two member denials",
		Persona: Persona(3, 2),
		Ballots: []Ballot{vote(Bob, deny, counted), vote(Carol, approve, counted), vote(Dave, deny, counted)},
		Want:    Want{bot.Denied, []string{"bob", "dave"}},
	},
	{
		Name:    "denyQuorum 2: one member denial stays pending",
		Persona: Persona(2, 2),
		Ballots: []Ballot{vote(Bob, deny, counted)},
		Want:    Want{bot.Pending, nil},
	},
	{
		Name:    "owner denial overrides members under denyQuorum 2",
		Persona: Persona(3, 2),
		Ballots: []Ballot{vote(Bob, approve, counted), vote(Carol, approve, counted), vote(Alice, deny, counted)},
		Want:    Want{bot.Denied, []string{"alice"}},
	},
	{
		Name:    "owner approval overrides one member denial under denyQuorum 2",
		Persona: Persona(2, 2),
		Ballots: []Ballot{vote(Bob, deny, counted), vote(Alice, approve, counted)},
		Want:    Want{bot.Approved, []string{"alice"}},
	},
	{
		Name:    "agent key voting is ignored",
		Persona: Persona(1, 1),
		Ballots: []Ballot{vote(Agent, approve, ignored), vote(AgentSlack, approve, ignored)},
		Want:    Want{bot.Pending, nil},
	},
	{
		Name: "agent key listed as owner in the struct is still ignored",
		Persona: with(Persona(1, 1), func(p *bot.Persona) {
			p.Owner = &bot.Person{Name: "alice", Identities: []bot.Identity{Alice, Agent}}
			p.Members = append(Members(), bot.Person{Name: "eve", Identities: []bot.Identity{AgentSlack}})
		}),
		Ballots: []Ballot{vote(Agent, approve, ignored), vote(AgentSlack, approve, ignored), vote(Agent, deny, ignored)},
		Want:    Want{bot.Pending, nil},
	},
	{
		Name:    "stranger is ignored",
		Persona: Persona(1, 1),
		Ballots: []Ballot{vote(Mallory, approve, ignored), vote(Mallory, deny, ignored), vote(SlackID("U0MALLORY"), deny, ignored)},
		Want:    Want{bot.Pending, nil},
	},
	{
		Name:    "one person on two identities counts once",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Bob, approve, counted), vote(BobSlack, approve, ignored), vote(Carol, approve, counted)},
		Want:    Want{bot.Approved, []string{"bob", "carol"}},
	},
	{
		Name:    "one person on two identities cannot flip",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(BobSlack, approve, counted), vote(Bob, deny, ignored)},
		Want:    Want{bot.Pending, nil},
	},
	{
		Name:    "flip attempt: member's first vote stands",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Bob, approve, counted), vote(Bob, deny, ignored), vote(Bob, approve, ignored)},
		Want:    Want{bot.Pending, nil},
	},
	{
		Name:    "flip attempt: owner's first vote stands",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Alice, approve, counted), vote(Alice, deny, ignored), vote(AliceSlack, deny, ignored)},
		Want:    Want{bot.Approved, []string{"alice"}},
	},
	{
		Name:    "votes after the decision are ignored",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Alice, deny, counted), vote(Bob, approve, ignored), vote(Carol, approve, ignored), vote(Mallory, approve, ignored)},
		Want:    Want{bot.Denied, []string{"alice"}},
	},
	{
		Name:    "votes after a member approval are ignored",
		Persona: Persona(1, 1),
		Ballots: []Ballot{vote(Carol, approve, counted), vote(Alice, deny, ignored), vote(Dave, deny, ignored)},
		Want:    Want{bot.Approved, []string{"carol"}},
	},
	{
		Name:    "proof signed: platform-vouched owner vote is ignored",
		Persona: with(Persona(1, 1), func(p *bot.Persona) { p.Proof = bot.ProofSignedOnly }),
		Ballots: []Ballot{vote(AliceSlack, approve, ignored), vote(BobSlack, approve, ignored), vote(Alice, deny, counted)},
		Want:    Want{bot.Denied, []string{"alice"}},
	},
	{
		Name:    "proof signed: a nostr identity vouched only by a platform is ignored",
		Persona: with(Persona(1, 1), func(p *bot.Persona) { p.Proof = bot.ProofSignedOnly }),
		Ballots: []Ballot{{Voter: Alice, Choice: approve, Proof: bot.ProofPlatform, Want: ignored}},
		Want:    Want{bot.Pending, nil},
	},
	{
		Name:    "proof any: platform-vouched member votes count",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(BobSlack, approve, counted), vote(Carol, approve, counted)},
		Want:    Want{bot.Approved, []string{"bob", "carol"}},
	},
	{
		Name:    "other emoji is ignored and does not use up the vote",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Alice, bot.Other, ignored), vote(Bob, bot.Other, ignored), vote(Alice, approve, counted)},
		Want:    Want{bot.Approved, []string{"alice"}},
	},
	{
		// NIP-25 clients send "+" as a plain like (issue 9, attack 8).
		Name:    "a + reaction is a like: recorded, ignored",
		Persona: Persona(0, 1),
		Ballots: []Ballot{vote(Alice, bot.ParseChoice("+"), ignored), vote(Alice, bot.ParseChoice("✅"), counted)},
		Want:    Want{bot.Approved, []string{"alice"}},
	},
	{
		Name:    "duplicate delivery",
		Persona: Persona(2, 1),
		Ballots: []Ballot{
			{Voter: Bob, Choice: approve, DedupKey: "nostr:1", Want: counted},
			{Voter: Bob, Choice: approve, DedupKey: "nostr:1", Want: bot.Duplicate},
			{Voter: Carol, Choice: approve, DedupKey: "nostr:1", Want: bot.Duplicate},
			{Voter: Carol, Choice: approve, DedupKey: "nostr:2", Want: counted},
			{Voter: Carol, Choice: approve, DedupKey: "nostr:2", Want: bot.Duplicate},
		},
		Want: Want{bot.Approved, []string{"bob", "carol"}},
	},
	{
		Name:    "a vote after the deadline is ignored and the request expires",
		Persona: Persona(1, 1),
		Ballots: []Ballot{{Voter: Alice, Choice: approve, Late: true, Want: ignored}},
		Want:    Want{bot.Expired, nil},
	},
	{
		Name:    "expiry: counted member votes short of quorum, then the deadline",
		Persona: Persona(2, 2),
		Ballots: []Ballot{vote(Bob, approve, counted), vote(Carol, deny, counted)},
		Expire:  true,
		Want:    Want{bot.Expired, nil},
	},
	{
		Name:    "expiry does not undo a decision",
		Persona: Persona(2, 1),
		Ballots: []Ballot{vote(Alice, approve, counted)},
		Expire:  true,
		Want:    Want{bot.Approved, []string{"alice"}},
	},
	{
		Name:    "after expiry every vote is ignored",
		Persona: Persona(1, 1),
		Ballots: []Ballot{
			{Voter: Alice, Choice: approve, Late: true, Want: ignored},
			{Voter: Alice, Choice: approve, Want: ignored},
			{Voter: Bob, Choice: approve, Want: ignored},
		},
		Want: Want{bot.Expired, nil},
	},
}
