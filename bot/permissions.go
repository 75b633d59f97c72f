package bot

import "time"

// Effect is what a permission rule decides for the calls it matches.
type Effect string

const (
	EffectAllow Effect = "allow"
	EffectDeny  Effect = "deny"
	EffectAsk   Effect = "ask"
)

// Rule is one permission rule, as a person wrote it: for a tool ("bash",
// "read", "edit", "write", "network", any tool name, or "*"), a wildcard
// pattern and what it decides. Within a layer the last matching rule wins.
type Rule struct {
	Tool    string `json:"tool"`
	Pattern string `json:"pattern"`
	Effect  Effect `json:"effect"`
	// Where is "file:line:col" of the rule, for explain.
	Where string `json:"where,omitempty"`
}

// Workspace is a persona's rules for calls made from inside an absolute
// path glob; they take precedence over the persona-wide rules.
type Workspace struct {
	Glob  string `json:"glob"`
	Rules []Rule `json:"rules"`
}

// Modes: how calls no rule or level resolves are decided.
const (
	ModeAsk  = "ask"  // people decide (the default)
	ModePlan = "plan" // read-only: anything not safe is denied, no one asked
	ModeAuto = "auto" // a reviewer endpoint first; unsure goes to people
)

// Reviewer is the endpoint a persona in mode auto asks first.
type Reviewer struct {
	URL     string        `json:"url"`
	Timeout time.Duration `json:"timeout"`
}

// DefaultGrantTTL is how long a "don't ask again" grant lasts when the
// persona names no grantTTL.
const DefaultGrantTTL = 24 * time.Hour

// GrantScope is what a "don't ask again" answer to a request would cover,
// worked out when the request is made and shown on its card before anyone
// answers. Nil on a request means ♾️ approves it once.
type GrantScope struct {
	// Tool is the permission tool: "bash", "edit", "network", a tool name.
	Tool string `json:"tool"`
	// Program and Subcommand (bash): the grant covers that program and
	// subcommand with any arguments. Exact, when set, is the one command
	// line covered instead (no subcommand could be told apart safely).
	Program    string `json:"program,omitempty"`
	Subcommand string `json:"subcommand,omitempty"`
	Exact      string `json:"exact,omitempty"`
	// Target is host:port (network).
	Target string `json:"target,omitempty"`
	// Workspace is the directory, or the persona's workspace glob, the
	// call was made in; the grant covers calls from there only.
	Workspace string `json:"workspace,omitempty"`
	// Level and Reasons are the classifier's verdict on the call asked
	// about: a grant never covers a call that is riskier or riskier in
	// another way (a reason the approved call did not have).
	Level   Level    `json:"level"`
	Reasons []string `json:"reasons"`
	// TTL is how long the grant lasts once made.
	TTL time.Duration `json:"ttl"`
}

// Text is the scope in words, as the card and `signoff grants` show it.
func (s GrantScope) Text() string {
	var what string
	switch {
	case s.Exact != "":
		what = "exactly `" + s.Exact + "`"
	case s.Program != "":
		what = "`" + s.Program
		if s.Subcommand != "" {
			what += " " + s.Subcommand
		}
		what += " …` (any arguments)"
	case s.Target != "":
		what = s.Tool + " to " + s.Target
	default:
		what = "any " + s.Tool + " call"
	}
	if s.Workspace != "" {
		what += " in " + s.Workspace
	}
	return what
}
