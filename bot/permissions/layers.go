package permissions

import (
	"path"
	"strings"

	"github.com/signoff/signoff/bot"
)

// Layer is what one layer of rules said about a call, for explain.
type Layer struct {
	Name   string     `json:"name"`
	Effect bot.Effect `json:"effect,omitempty"` // empty: no rule matched
	Rule   *bot.Rule  `json:"rule,omitempty"`
	Exact  bool       `json:"exact,omitempty"`
	Note   string     `json:"note,omitempty"`
}

// Evaluation is what the rules, all layers together, say about a call.
type Evaluation struct {
	Effect bot.Effect // empty: no rule matched
	Rule   *bot.Rule
	// Exact: every subject was allowed by a rule without a wildcard.
	Exact     bool
	Layers    []Layer
	Workspace string // the persona workspace glob the cwd is in, if any
}

var strictness = map[bot.Effect]int{bot.EffectAllow: 0, "": 1, bot.EffectAsk: 2, bot.EffectDeny: 3}

// Evaluate applies a persona's layers and a repository's rules to a call.
// Precedence: the workspaces the cwd is in (the one written last first),
// then the persona's own rules: the first layer with a matching rule
// decides. The repository's deny and ask rules then tighten that.
func Evaluate(p bot.Persona, c Call, repo *RepoRules) Evaluation {
	var ev Evaluation
	decided := false
	for i := len(p.Workspaces) - 1; i >= 0; i-- {
		w := p.Workspaces[i]
		if c.Cwd == "" || !MatchPath(w.Glob, c.Cwd) {
			continue
		}
		if ev.Workspace == "" {
			ev.Workspace = w.Glob
		}
		l := evalLayer("workspace "+w.Glob, w.Rules, c, false)
		if decided && l.Effect != "" {
			l.Note = "not used: a workspace written later decided"
		}
		if !decided && l.Effect != "" {
			decided = true
			ev.Effect, ev.Rule, ev.Exact = l.Effect, l.Rule, l.Exact
		}
		ev.Layers = append(ev.Layers, l)
	}
	l := evalLayer("persona "+p.Name, p.Permissions, c, false)
	if decided && l.Effect != "" {
		l.Note = "not used: a workspace layer decided (workspaces take precedence)"
	}
	if !decided && l.Effect != "" {
		ev.Effect, ev.Rule, ev.Exact = l.Effect, l.Rule, l.Exact
	}
	ev.Layers = append(ev.Layers, l)
	if repo != nil {
		rl := evalLayer("repository "+repo.File, repo.Rules, c, true)
		if repo.Problem != "" {
			rl.Note = "unreadable (" + repo.Problem + "): everything asks"
		}
		if strictness[rl.Effect] > strictness[ev.Effect] {
			ev.Effect, ev.Rule, ev.Exact = rl.Effect, rl.Rule, false
		}
		ev.Layers = append([]Layer{rl}, ev.Layers...)
	}
	return ev
}

// evalLayer finds, for each subject of the call, the last rule of the
// layer that matches it, and keeps the strictest: an allow holds only when
// every subject is allowed. A bash command line is also matched whole
// against deny and ask rules. tighten drops allow rules (a repository's).
func evalLayer(name string, rules []bot.Rule, c Call, tighten bool) Layer {
	l := Layer{Name: name}
	ignored := false
	effectOf := func(subject string, allowOK bool) (bot.Effect, *bot.Rule) {
		var hit *bot.Rule
		for i := range rules {
			r := &rules[i]
			if !toolMatches(r.Tool, c) || !subjectMatches(r, subject, c) {
				continue
			}
			if r.Effect == bot.EffectAllow && (tighten || !allowOK) {
				if tighten {
					ignored = true
				}
				continue
			}
			hit = r
		}
		if hit == nil {
			return "", nil
		}
		return hit.Effect, hit
	}
	first := true
	exact := true
	for _, s := range c.Subjects {
		e, r := effectOf(s, true)
		if e == bot.EffectAllow && !Exact(*r) {
			exact = false
		}
		if first || strictness[e] > strictness[l.Effect] {
			l.Effect, l.Rule = e, r
		}
		first = false
	}
	if l.Effect != bot.EffectAllow {
		exact = false
	}
	if c.Tool == "bash" && len(c.Subjects) > 1 {
		if e, r := effectOf(normalize(c.Line), false); strictness[e] > strictness[l.Effect] && e != "" {
			l.Effect, l.Rule, exact = e, r, false
		}
	}
	l.Exact = exact && l.Effect == bot.EffectAllow
	if ignored {
		l.Note = "allow rules ignored: this file is in the agent's reach, so it may only tighten"
	}
	return l
}

func toolMatches(tool string, c Call) bool {
	return tool == "*" || tool == c.Tool || tool == c.Name
}

// subjectMatches matches a rule's pattern against one subject. A relative
// path pattern ("docs/*") is matched against the path relative to the cwd.
func subjectMatches(r *bot.Rule, subject string, c Call) bool {
	if Match(r.Pattern, subject) {
		return true
	}
	switch c.Tool {
	case "read", "edit", "write":
		if c.Cwd != "" && !path.IsAbs(r.Pattern) && path.IsAbs(subject) {
			if rel, ok := strings.CutPrefix(subject, path.Clean(c.Cwd)+"/"); ok {
				return Match(r.Pattern, rel)
			}
		}
	}
	return false
}
