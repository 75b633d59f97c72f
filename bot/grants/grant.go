package grants

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/signoff/signoff/bot"
)

// Grant is a standing approval for a persona's calls within a scope.
type Grant struct {
	ID      string         `json:"id"`
	Persona string         `json:"persona"`
	Scope   bot.GrantScope `json:"scope"`
	// Text is the scope in words, as shown on the card.
	Text    string    `json:"text"`
	By      []string  `json:"by"`
	Request string    `json:"request"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	Uses    int64     `json:"uses"`
}

// Store keeps grants. Every replica reads it on every check, so a revoked
// grant stops covering at once everywhere.
type Store interface {
	// PutGrant stores g until g.Expires; false when a grant with its id
	// exists already.
	PutGrant(ctx context.Context, g Grant) (bool, error)
	// Grants returns the live grants of persona ("" for all), oldest first.
	Grants(ctx context.Context, persona string, now time.Time) ([]Grant, error)
	// UseGrant counts one use; false when the grant is gone (revoked or
	// expired), and then it must not be relied on.
	UseGrant(ctx context.Context, id string) (bool, error)
	// RevokeGrant ends a grant and returns it; bot.ENotFound when there
	// is none.
	RevokeGrant(ctx context.Context, id string) (Grant, error)
}

// Call is a call as grants see it: the permission tool, what the call
// names (a command line, the paths, host:port), its workspace and risk.
type Call struct {
	Tool string
	// Line is the command line (bash), the only subject of a command.
	Line string
	// Target is host:port (network).
	Target    string
	Workspace string
	Level     bot.Level
	Reasons   []string
}

// wrappers run the program named by their first argument, so their
// "subcommand" is another program: a grant for them is exact only.
var wrappers = map[string]bool{
	"sudo": true, "doas": true, "su": true, "env": true, "xargs": true, "nice": true, "nohup": true,
	"timeout": true, "time": true, "command": true, "exec": true, "builtin": true, "eval": true,
	"bash": true, "sh": true, "zsh": true, "dash": true, "fish": true, "ksh": true, "source": true, ".": true,
	"strace": true, "ltrace": true, "watch": true, "flock": true, "stdbuf": true, "ionice": true,
	"chroot": true, "unshare": true, "nsenter": true, "setsid": true, "script": true, "busybox": true,
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,63}$`)

// Words returns the words of a single plain command — one simple command,
// literal words only, no assignments, redirections or substitutions — and
// false for anything else.
func Words(line string) ([]string, bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil || len(f.Stmts) != 1 {
		return nil, false
	}
	st := f.Stmts[0]
	if st.Negated || st.Background || st.Coprocess || len(st.Redirs) > 0 {
		return nil, false
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return nil, false
	}
	words := make([]string, 0, len(call.Args))
	for _, w := range call.Args {
		lit := w.Lit()
		if lit == "" || strings.ContainsAny(lit, "*?[]{}~\\") {
			return nil, false
		}
		words = append(words, lit)
	}
	return words, true
}

// ScopeOf is what a grant made for c would cover, or nil when no grant
// can be made for it (no workspace for a command or tool call).
func ScopeOf(c Call, ttl time.Duration) *bot.GrantScope {
	s := &bot.GrantScope{Tool: c.Tool, Workspace: c.Workspace, Level: c.Level, Reasons: sortedCopy(c.Reasons), TTL: ttl}
	switch {
	case c.Tool == "network":
		if c.Target == "" {
			return nil
		}
		s.Target = c.Target
		s.Workspace = ""
		return s
	case c.Workspace == "":
		return nil
	case c.Tool == "bash":
		words, ok := Words(c.Line)
		if !ok {
			if strings.TrimSpace(c.Line) == "" {
				return nil
			}
			s.Exact = strings.Join(strings.Fields(c.Line), " ")
			return s
		}
		if len(words) >= 2 && !wrappers[words[0]] && plainWord.MatchString(words[0]) && plainWord.MatchString(words[1]) {
			s.Program, s.Subcommand = words[0], words[1]
			return s
		}
		s.Exact = strings.Join(words, " ")
		return s
	}
	return s
}

// Covers reports whether a grant of scope s covers call c.
func Covers(s bot.GrantScope, c Call) bool {
	if s.Tool != c.Tool || s.Workspace != c.Workspace || worse(c.Level, s.Level) {
		return false
	}
	for _, r := range c.Reasons {
		if !slices.Contains(s.Reasons, r) {
			return false
		}
	}
	switch {
	case s.Tool == "network":
		return s.Target != "" && s.Target == c.Target
	case s.Exact != "":
		return s.Exact == strings.Join(strings.Fields(c.Line), " ")
	case s.Program != "":
		words, ok := Words(c.Line)
		return ok && len(words) >= 2 && words[0] == s.Program && words[1] == s.Subcommand
	case s.Tool == "bash":
		return false // a command grant always names what it covers
	}
	return true
}

var rank = map[bot.Level]int{bot.Safe: 0, bot.Caution: 1, bot.Dangerous: 2}

// worse reports whether level a is riskier than b; an unknown level is
// the riskiest.
func worse(a, b bot.Level) bool {
	ra, ok := rank[a]
	if !ok {
		ra = 3
	}
	rb, ok := rank[b]
	if !ok {
		return true
	}
	return ra > rb
}

func sortedCopy(s []string) []string {
	out := append([]string{}, s...)
	slices.Sort(out)
	return slices.Compact(out)
}
