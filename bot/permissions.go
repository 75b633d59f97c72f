package bot

import (
	"fmt"
	"strings"
	"time"
)

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
//
// A command grant covers a later call only when nothing that made the
// first one risky grew: the same wrappers, program and subcommand; no
// option it did not have (but those in MayAdd), those in Keep kept; the
// operands as OperandRule says (docs/grants.md).
type GrantScope struct {
	// Tool is the permission tool: "bash", "edit", "network", a tool name.
	Tool string `json:"tool"`
	// Wrappers (bash) are the commands the covered one runs inside, each
	// as written ("ssh prod", "sudo", "docker exec web"): a later call
	// runs inside the very same ones.
	Wrappers []string `json:"wrappers,omitempty"`
	// Program and Subcommand (bash) the grant covers. Exact, when set, is
	// the one command line covered instead (no command could be told
	// apart safely).
	Program    string `json:"program,omitempty"`
	Subcommand string `json:"subcommand,omitempty"`
	Exact      string `json:"exact,omitempty"`
	// Options are the options of the call asked about ("-n" or "-n=v"): a
	// later call may drop them, and may add only those named in MayAdd.
	// Keep names options a later call must keep (with no other value).
	Options []string `json:"options,omitempty"`
	MayAdd  []string `json:"may_add,omitempty"`
	Keep    []string `json:"keep,omitempty"`
	// NotAdded names options that would widen the call, with why: shown
	// so people see what the grant does not cover.
	NotAdded []string `json:"not_added,omitempty"`
	// Operands of the call asked about (paths made absolute), and how a
	// later call's may differ: "same", "paths" (inside these), "kind"
	// (the first the same), "any" — never more of them. Empty on a
	// command grant made before this rule: it covers nothing.
	Operands    []string `json:"operands,omitempty"`
	OperandRule string   `json:"operand_rule,omitempty"`
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

// Clone returns a deep copy of s.
func (s GrantScope) Clone() *GrantScope {
	c := s
	for _, p := range []*[]string{&c.Wrappers, &c.Options, &c.MayAdd, &c.Keep, &c.NotAdded, &c.Operands, &c.Reasons} {
		if *p != nil {
			*p = append([]string{}, (*p)...)
		}
	}
	return &c
}

// Text is the scope in words, as the card and `signoff grants` show it.
func (s GrantScope) Text() string {
	var what string
	switch {
	case s.Exact != "":
		what = "exactly `" + s.Exact + "`"
	case s.Program != "" && s.OperandRule == "":
		what = "`" + strings.TrimSpace(s.Program+" "+s.Subcommand) + "` (a grant made before grants were narrowed: it covers nothing)"
	case s.Program != "":
		what = "`" + strings.TrimSpace(s.Program+" "+s.Subcommand) + "`"
		if len(s.Wrappers) > 0 {
			what += " run through `" + strings.Join(s.Wrappers, "` then `") + "` (the same host, container, user and variables)"
		}
		what += ", " + s.operandsText() + "; " + s.optionsText()
	case s.Target != "":
		what = s.Tool + " to " + s.Target
	default:
		what = "any " + s.Tool + " call"
	}
	if s.Workspace != "" {
		what += "; in " + s.Workspace
	}
	return what
}

func (s GrantScope) operandsText() string {
	n := len(s.Operands)
	if n == 0 {
		return "with no operands"
	}
	list := "`" + strings.Join(s.Operands, "` `") + "`"
	switch s.OperandRule {
	case "paths":
		return fmt.Sprintf("on paths inside %s (at most %d)", list, n)
	case "kind":
		return fmt.Sprintf("on `%s` only (the same kind; at most %d operands, as in %s)", s.Operands[0], n, list)
	case "any":
		return fmt.Sprintf("with any operands, at most %d (as in %s)", n, list)
	}
	return "on " + list + " only"
}

func (s GrantScope) optionsText() string {
	var parts []string
	if len(s.Options) == 0 {
		parts = append(parts, "no options")
	} else {
		parts = append(parts, "options `"+strings.Join(s.Options, "` `")+"` or fewer")
	}
	if len(s.Keep) > 0 {
		parts = append(parts, "keeping `"+strings.Join(s.Keep, "` `")+"`")
	}
	if len(s.MayAdd) > 0 {
		parts = append(parts, "may add `"+strings.Join(s.MayAdd, "` `")+"`")
	}
	t := strings.Join(parts, ", ") + "; any other option (but --verbose, --quiet, --color, --no-color, --help) asks again"
	if n := len(s.NotAdded); n > 0 {
		shown := s.NotAdded[:min(n, 4)]
		t += " (" + strings.Join(shown, "; ")
		if n > len(shown) {
			t += "; …"
		}
		t += ")"
	}
	return t
}
