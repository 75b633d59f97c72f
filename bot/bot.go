package bot

import (
	"encoding/json"
	"strings"
	"time"
)

// Platform names where an identity lives or a message was posted.
type Platform string

const (
	Nostr    Platform = "nostr"
	Slack    Platform = "slack"
	Discord  Platform = "discord"
	Terminal Platform = "terminal" // the gateway's own API: `signoff pending`
)

// Identity is one account of one person on one platform. For Nostr the ID
// is the 64-character hex public key; for Slack and Discord the user ID.
type Identity struct {
	Platform Platform `json:"platform"`
	ID       string   `json:"id"`
}

func (i Identity) String() string { return string(i.Platform) + ":" + i.ID }

// Person is an owner or member of a persona: a name and the identities
// through which their vote arrives. Votes from any of them count once.
type Person struct {
	Name       string     `json:"name"`
	Identities []Identity `json:"identities"`
}

// Proof says what vouches for a vote.
type Proof string

const (
	// ProofSigned: the voter signed the vote with their own key (Nostr).
	ProofSigned Proof = "signed"
	// ProofPlatform: a platform vouched for the voter (a signed Slack
	// request, a Discord interaction, the bot's authenticated connection).
	ProofPlatform Proof = "platform"
)

// ProofPolicy is a persona's rule on which votes may count.
type ProofPolicy string

const (
	ProofAny        ProofPolicy = "any"
	ProofSignedOnly ProofPolicy = "signed"
)

// ChannelConfig is one place a persona's requests are posted.
type ChannelConfig struct {
	Platform Platform `json:"platform"`
	// Target is the Slack or Discord channel ID.
	Target string `json:"target,omitempty"`
	// Relays, Mode, Root and Group describe a Nostr channel: relays to
	// publish to; mode "note" (kind 1 tagging every member), "nip28" (kind
	// 42 under channel Root) or "nip29" (group Group, `h` tag).
	Relays []string `json:"relays,omitempty"`
	Mode   string   `json:"mode,omitempty"`
	Root   string   `json:"root,omitempty"`
	Group  string   `json:"group,omitempty"`
}

// DefaultTimeout is how long a request waits when its persona names none.
const DefaultTimeout = 5 * time.Minute

// Persona is an agent's profile, written by a person: the agent's own
// identities (which never count), who may decide, how many, where to ask.
type Persona struct {
	Name           string          `json:"name"`
	Agent          []Identity      `json:"agent,omitempty"`
	Owner          *Person         `json:"owner,omitempty"`
	Members        []Person        `json:"members,omitempty"`
	ApprovalQuorum int             `json:"approvalQuorum"`
	DenyQuorum     int             `json:"denyQuorum"`
	Proof          ProofPolicy     `json:"proof"`
	Timeout        time.Duration   `json:"timeout"`
	Channels       []ChannelConfig `json:"channels,omitempty"`
	// Remind re-posts a pending request on each channel this often (0: never).
	Remind time.Duration `json:"remind,omitempty"`
	// Escalate names members to call on once a request has waited After.
	Escalate *Escalation `json:"escalate,omitempty"`
	// Notify is a command run for each new request (bot/notify). Never
	// stored: whoever can write the store must not choose a command the
	// gateway runs, so serve takes it from the files it loaded.
	Notify *Notify `json:"-"`

	// Permission rules and modes (docs/design.md#permission-rules-modes-and-grants; bot/permissions decides).
	Mode        string        `json:"mode,omitempty"`     // ModeAsk (default), ModePlan, ModeAuto
	GrantTTL    time.Duration `json:"grantTTL,omitempty"` // 0: DefaultGrantTTL
	Permissions []Rule        `json:"permissions,omitempty"`
	Workspaces  []Workspace   `json:"workspaces,omitempty"`
	Reviewer    *Reviewer     `json:"reviewer,omitempty"`
	// Caution is "allow" when the hook should allow caution calls itself;
	// empty leaves them to the agent's own rules.
	Caution string `json:"caution,omitempty"`
	// Sandbox is the persona's walls for signoff run (bot/sandbox).
	Sandbox *SandboxWalls `json:"sandbox,omitempty"`
}

// SandboxWalls is a persona's `sandbox:` section: what signoff run makes
// writable and hides beyond its defaults. Only a person edits it.
type SandboxWalls struct {
	Writable []string `json:"writable,omitempty"`
	Hide     []string `json:"hide,omitempty"`
	// Loopback "any" lets the agent connect to any TCP port of its own
	// sandbox's loopback (its dev servers and tests); empty: only the
	// doors. The network namespace is the wall either way.
	Loopback string `json:"loopback,omitempty"`
}

// Notify is a persona's `notify: {command: [argv…], timeout: 10s}`: run by
// the replica that created a request, with the request as JSON on stdin.
type Notify struct {
	Command []string      `json:"command"`
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Escalation is a persona's `escalate: {after: 3m, to: [bob]}`.
type Escalation struct {
	After time.Duration `json:"after"`
	To    []string      `json:"to"`
}

// Status is where a request stands. Every status but Pending is final.
type Status string

const (
	Pending  Status = "pending"
	Approved Status = "approved"
	Denied   Status = "denied"
	Expired  Status = "expired"
	// Withdrawn: the requester went away or took it back. Final, and
	// never an approval.
	Withdrawn Status = "withdrawn"
)

// Final reports whether s is a decision.
func (s Status) Final() bool { return s == Approved || s == Denied || s == Expired || s == Withdrawn }

// Level is the risk class of an action.
type Level string

const (
	Safe      Level = "safe"
	Caution   Level = "caution"
	Dangerous Level = "dangerous"
)

// Kind is what sort of action is asked for.
type Kind string

const (
	KindCommand Kind = "command"
	KindTool    Kind = "tool"
	KindNetwork Kind = "network"
	KindText    Kind = "text"
)

// Assessment is the classifier's verdict on an action.
type Assessment struct {
	Level   Level    `json:"level"`
	Reasons []string `json:"reasons"`
}

// Choice is what a voter answered.
type Choice string

const (
	Approve Choice = "approve"
	Deny    Choice = "deny"
	// Always approves and, from an electorate that may approve, asks for
	// a "don't ask again" grant (♾️).
	Always Choice = "always"
	// Other is a reaction that is neither: recorded, never counted.
	Other Choice = "other"
)

// Result says what became of a vote.
type Result string

const (
	Counted   Result = "counted"
	Ignored   Result = "ignored"
	Duplicate Result = "duplicate"
)

// MessageRef names one message signoff posted (or a request's own Nostr
// event) so that answers to it find their request and it can be edited.
type MessageRef struct {
	Platform Platform `json:"platform"`
	Channel  string   `json:"channel,omitempty"`
	ID       string   `json:"id"`
}

// Key is the ref's stable lookup key.
func (m MessageRef) Key() string { return string(m.Platform) + ":" + m.Channel + ":" + m.ID }

// Vote is one answer as recorded on a request: who, what, with which proof,
// and whether it counted.
type Vote struct {
	Voter  Identity  `json:"voter"`
	Name   string    `json:"name,omitempty"` // the person, when the voter is known
	Choice Choice    `json:"vote"`
	Proof  Proof     `json:"proof"`
	At     time.Time `json:"at"`
	Result Result    `json:"result"`
	Why    string    `json:"why,omitempty"`
	// Reason is what the voter said with the vote ("use the staging bucket").
	Reason string `json:"reason,omitempty"`
}

// Ballot is an answer arriving from a platform, before it is judged.
type Ballot struct {
	// RequestID or Ref names the request voted on; Ref is looked up when
	// RequestID is empty (a reaction names a message, not a request).
	RequestID string
	Ref       MessageRef
	Voter     Identity
	Choice    Choice
	Proof     Proof
	// DedupKey makes a delivery count once across retries and replicas:
	// the Nostr event id, Slack's event_id, Discord's interaction id.
	DedupKey string
	// Evidence is the raw proof kept in the audit log: the signed event,
	// or the platform payload and its signature headers.
	Evidence json.RawMessage
	At       time.Time
	// Reason is what the voter said with it, kept with the vote.
	Reason string
}

// VoteOutcome is what CastVote tells the platform that delivered a ballot.
type VoteOutcome struct {
	RequestID string `json:"request_id"`
	Result    Result `json:"result"`
	Reason    string `json:"reason,omitempty"`
	Status    Status `json:"status"`
	// Decided is true on exactly one ballot: the one that decided.
	Decided bool `json:"-"`
	// Grant is set with Decided when the deciding votes were all "always"
	// and could approve on their own: the request's grant is to be made.
	Grant bool `json:"-"`
	// Recorded is false when the answer was not stored: a duplicate, or
	// an ignored answer past the store's limit on one request.
	Recorded bool `json:"-"`
	// Notified is true when the store's vote step itself told every
	// gateway of the change (quorum/redis publishes it in the same
	// script): the gateway does not tell them again.
	Notified bool `json:"-"`
}

// Request is one ask for approval and everything that became of it.
type Request struct {
	ID        string    `json:"id"`
	Persona   string    `json:"persona"`
	Kind      Kind      `json:"kind"`
	Action    string    `json:"action"`
	Reason    string    `json:"reason"`
	Status    Status    `json:"status"`
	Level     Level     `json:"level"`
	Reasons   []string  `json:"reasons"`
	CreatedAt time.Time `json:"created_at"`
	Deadline  time.Time `json:"deadline"`
	// Event is the signed Nostr event announcing the request.
	Event json.RawMessage `json:"event,omitempty"`
	// EventID and GatewayKey are what a reaction must name (e and p tags).
	EventID    string `json:"event_id,omitempty"`
	GatewayKey string `json:"gateway_pubkey,omitempty"`

	DecidedBy      []string     `json:"decided_by,omitempty"`
	DecidedAt      *time.Time   `json:"decided_at,omitempty"`
	DecisionReason string       `json:"decision_reason,omitempty"`
	Votes          []Vote       `json:"votes"`
	Messages       []MessageRef `json:"messages,omitempty"`
	// Electorate is who may still decide and what would (pending requests).
	Electorate *Electorate `json:"electorate,omitempty"`

	// GrantScope is what an "always" answer would grant (nil: none);
	// Always is set when the request was approved with a grant.
	GrantScope *GrantScope `json:"grant_scope,omitempty"`
	Always     bool        `json:"always,omitempty"`
	// Nonce is the one the client sent; its receipt carries it back.
	Nonce string `json:"nonce,omitempty"`
	// Receipt is the gateway's signed decision (a Nostr event of kind
	// KindReceipt), present once the request is decided.
	Receipt json.RawMessage `json:"receipt,omitempty"`

	// Escalated is set only on the copy of a request an escalation hands
	// to Channel.Post: the re-post pings these people. Never stored.
	Escalated *Escalated `json:"-"`
	// Seen is how many answers the store held when it read the request
	// (Votes may show fewer: a malformed line is skipped). A long-poll
	// that was answered with it passes it back (WaitFunc's seen), so the
	// gateway knows what it has seen. Not part of the request's JSON.
	Seen int `json:"-"`
}

// Escalated is who an escalation calls on and what the request still needs.
type Escalated struct {
	To    []Person
	Needs string // Electorate.Needs
}

// Line is the escalation line of a re-post: "escalated to bob, carol:
// still needs …". mention gives a person's mention on the platform, or
// false when they have no identity there; they are then named in plain
// text. text makes plain text safe on the platform; it is given
// bot.Escape's output.
func (e *Escalated) Line(mention func(Person) (string, bool), text func(string) string) string {
	if text == nil {
		text = func(s string) string { return s }
	}
	names := make([]string, 0, len(e.To))
	for _, p := range e.To {
		if m, ok := mention(p); ok {
			names = append(names, m)
		} else {
			names = append(names, text(Escape(p.Name)))
		}
	}
	s := text("escalated to ") + strings.Join(names, ", ")
	if e.Needs != "" {
		s += text(": still needs " + Escape(e.Needs))
	}
	return s
}

// IdentityOn is p's identity on platform pl, if any.
func (p Person) IdentityOn(pl Platform) (string, bool) {
	for _, id := range p.Identities {
		if id.Platform == pl && id.ID != "" {
			return id.ID, true
		}
	}
	return "", false
}

// NewRequest is what an agent submits.
type NewRequest struct {
	Persona string `json:"persona"`
	Action  string `json:"action"`
	Reason  string `json:"reason"`
	Kind    Kind   `json:"kind,omitempty"`
	// Timeout shortens the persona's timeout; it can never lengthen it.
	Timeout Duration `json:"timeout,omitempty"`
	// GrantScope is set by the gateway's own check (never from JSON): what
	// an "always" answer would grant.
	GrantScope *GrantScope `json:"-"`
	// Nonce is a client's random value, returned in the decision's receipt
	// so an old receipt cannot be replayed as this request's (NewNonce).
	Nonce string `json:"nonce,omitempty"`
}

// Filter selects requests to list.
type Filter struct {
	Status Status
}

// Duration is a time.Duration written in JSON as "90s".
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return Errorf(EInvalid, "timeout must be a duration string such as \"90s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return Errorf(EInvalid, "timeout %q is not a positive duration", s)
	}
	*d = Duration(v)
	return nil
}
