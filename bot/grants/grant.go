package grants

import (
	"context"
	"maps"
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
	Target string
	// Cwd is where the command runs: relative path operands are read
	// from it.
	Cwd       string
	Workspace string
	Level     bot.Level
	Reasons   []string
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
		return commandScope(s, c, Default())
	}
	return s
}

// commandScope fills s for a command: its wrappers, program and
// subcommand, options and operands, and from k what a later call may
// change; the exact line when the command cannot be followed.
func commandScope(s *bot.GrantScope, c Call, k *Knowledge) *bot.GrantScope {
	words, ok := Words(c.Line)
	if !ok && strings.TrimSpace(c.Line) == "" {
		return nil
	}
	var cmd command
	if ok {
		cmd, ok = k.parse(words)
	}
	if !ok || !plainWord.MatchString(cmd.Program) && !strings.HasPrefix(cmd.Program, "@") {
		if s.Exact = exactLine(c.Line); s.Exact == "" {
			return nil
		}
		return s
	}
	p := k.program(cmd.Program)
	s.Wrappers, s.Program, s.Subcommand = cmd.Wrappers, cmd.Program, cmd.Sub
	s.Options = cmd.Options
	s.OperandRule = p.Operands
	s.Operands = cmd.Operands
	if p.Operands == OperandsPaths {
		s.Operands = make([]string, len(cmd.Operands))
		for i, o := range cmd.Operands {
			s.Operands[i] = resolve(o, c.Cwd)
		}
	}
	for _, o := range cmd.Options {
		if n := optName(o); (slices.Contains(p.Narrows, n) || slices.Contains(p.Target, n)) && !slices.Contains(s.Keep, n) {
			s.Keep = append(s.Keep, n)
		}
	}
	s.MayAdd = slices.Concat(p.Narrows, p.Harmless)
	slices.Sort(s.MayAdd)
	s.MayAdd = slices.Compact(s.MayAdd)
	for _, n := range slices.Sorted(maps.Keys(p.Widens)) {
		if !slices.ContainsFunc(cmd.Options, func(o string) bool { return optName(o) == n }) {
			s.NotAdded = append(s.NotAdded, n+": "+p.Widens[n])
		}
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
		return s.Exact == exactLine(c.Line)
	case s.Program != "":
		return coversCommand(s, c, Default())
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

// coversCommand reports whether the command grant s covers c's line:
// nothing that made the granted call risky grew.
func coversCommand(s bot.GrantScope, c Call, k *Knowledge) bool {
	if s.OperandRule == "" {
		return false // made before grants were narrowed: covers nothing
	}
	words, ok := Words(c.Line)
	if !ok {
		return false
	}
	cmd, ok := k.parse(words)
	if !ok || !slices.Equal(cmd.Wrappers, s.Wrappers) || cmd.Program != s.Program || cmd.Sub != s.Subcommand {
		return false
	}
	// No option the granted call did not have, but those that may be added.
	for _, o := range cmd.Options {
		if !slices.Contains(s.Options, o) && !slices.Contains(s.MayAdd, optName(o)) && !k.harmless(s.Program, optName(o)) {
			return false
		}
	}
	// Options kept: a narrowing one with no value the grant did not have,
	// a target one exactly.
	for _, n := range s.Keep {
		var had, has []string
		for _, o := range s.Options {
			if optName(o) == n {
				had = append(had, o)
			}
		}
		for _, o := range cmd.Options {
			if optName(o) == n {
				has = append(has, o)
			}
		}
		if len(has) == 0 {
			return false
		}
		for _, o := range has {
			if !slices.Contains(had, o) {
				return false
			}
		}
		if !slices.Contains(s.MayAdd, n) && len(sortedCopy(has)) != len(sortedCopy(had)) {
			return false
		}
	}
	ops := cmd.Operands
	if len(ops) > len(s.Operands) {
		return false
	}
	switch s.OperandRule {
	case OperandsAny:
		return true
	case OperandsKind:
		return len(ops) == 0 && len(s.Operands) == 0 || len(ops) > 0 && ops[0] == s.Operands[0]
	case OperandsPaths:
		for _, o := range ops {
			o = resolve(o, c.Cwd)
			if !slices.ContainsFunc(s.Operands, func(base string) bool { return within(o, base) }) {
				return false
			}
		}
		return true
	}
	return slices.Equal(ops, s.Operands)
}

// exactLine is a line as an exact grant names it: its words when it is
// one plain command, else its text with runs of space made one.
func exactLine(line string) string {
	if words, ok := Words(line); ok {
		return strings.Join(words, " ")
	}
	return strings.Join(strings.Fields(line), " ")
}
