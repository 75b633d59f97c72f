package tokens

import (
	"slices"
	"strings"

	"github.com/signoff/signoff/bot"
)

// Scope is one thing a token lets its holder do. Each allows exactly the
// endpoints the scope table lists for it (docs/guide.md, tokens).
type Scope string

const (
	Request      Scope = "request"       // file approval requests, follow and withdraw them
	Check        Scope = "check"         // ask whether a call may run (hook, exec); log what ran
	ReadRequests Scope = "read:requests" // read requests and their votes
	Classify     Scope = "classify"      // ask the gateway's classifier
	NetRequest   Scope = "net:request"   // ask for network access, read the policy
	Publish      Scope = "publish"       // post a message through a persona's channels
	Admin        Scope = "admin"         // tokens, grants, approving network access
)

// All is every scope, in the order the consent block lists them.
var All = []Scope{Request, Check, ReadRequests, Classify, NetRequest, Publish, Admin}

// words is what a person is shown for each scope: what the holder can do.
var words = map[Scope]string{
	Request:      "ask people to approve actions (shell commands, tool calls, text) and wait for the answer",
	Check:        "ask whether a call may run without asking, and record calls that ran",
	ReadRequests: "read approval requests, their reasons and who voted",
	Classify:     "ask how risky a command is",
	NetRequest:   "ask for network access and read the network policy",
	Publish:      "post messages in your personas' chat channels, as signoff",
	Admin:        "create and revoke tokens, revoke grants, approve network access: everything a person can do but vote",
}

// Words is the plain-words description of s.
func (s Scope) Words() string { return words[s] }

// Risky scopes are flagged ⚠ in the consent block.
func (s Scope) Risky() bool { return s == Publish || s == Admin }

// Valid reports whether s is one of All.
func (s Scope) Valid() bool { _, ok := words[s]; return ok }

// ParseScopes reads a comma-separated list ("request,check"). Unknown
// names are an error naming them and the known ones; duplicates collapse.
func ParseScopes(list string) ([]Scope, error) {
	var out []Scope
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		s := Scope(f)
		if !s.Valid() {
			return nil, bot.Errorf(bot.EInvalid, "unknown scope %q (scopes: %s)", f, Join(All))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Scope) int { return slices.Index(All, a) - slices.Index(All, b) })
	return out, nil
}

// Join lists scopes comma-separated.
func Join(ss []Scope) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, ",")
}

// Lacks is the 403 for a token missing every one of need.
func Lacks(name string, need []Scope) error {
	return bot.Errorf(bot.EForbidden, "token %q lacks scope %s", name, strings.Join(scopeStrings(need), " or "))
}

func scopeStrings(ss []Scope) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}
