package quorum

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/permissions"
)

// rawNode keeps a YAML node to be read later, in order, with positions.
type rawNode struct{ n ast.Node }

func (r *rawNode) UnmarshalYAML(n ast.Node) error {
	r.n = n
	return nil
}

type reviewerFile struct {
	URL     text `yaml:"url"`
	Timeout text `yaml:"timeout"`
	At      text `yaml:"-"`
}

func (r *reviewerFile) UnmarshalYAML(n ast.Node) error {
	type plain reviewerFile
	var p plain
	if err := yaml.NodeToValue(n, &p, yaml.Strict()); err != nil {
		return err
	}
	*r = reviewerFile(p)
	r.At = at(n)
	return nil
}

// maxGrantTTL is the longest grantTTL a persona may set.
const maxGrantTTL = 30 * 24 * time.Hour

// parsePermissions reads mode, grantTTL, permissions, workspaces, reviewer
// and caution into p, adding a problem for each thing wrong.
func parsePermissions(file string, f *personaFile, p *bot.Persona, add func(text, bool, string, ...any)) {
	switch f.Mode.V {
	case "", bot.ModeAsk:
	case bot.ModePlan, bot.ModeAuto:
		p.Mode = f.Mode.V
	default:
		add(f.Mode, false, "mode must be ask, plan or auto, not %q", f.Mode.V)
	}
	if f.GrantTTL.V != "" {
		d, err := time.ParseDuration(f.GrantTTL.V)
		switch {
		case err != nil:
			add(f.GrantTTL, false, "grantTTL %q is not a duration such as 24h or 30m", f.GrantTTL.V)
		case d <= 0 || d > maxGrantTTL:
			add(f.GrantTTL, false, "grantTTL must be more than 0 and at most %s", maxGrantTTL)
		default:
			p.GrantTTL = d
		}
	}
	problem := func(pr permissions.Problem) {
		add(text{Line: pr.Line, Col: pr.Column}, false, "%s", pr.Message)
	}
	if f.Permissions.n != nil {
		rules, ps := permissions.RulesFromNode(file, f.Permissions.n)
		for _, pr := range ps {
			problem(pr)
		}
		p.Permissions = rules
	}
	if f.Workspaces.n != nil {
		ws, ps := permissions.WorkspacesFromNode(file, f.Workspaces.n)
		for _, pr := range ps {
			problem(pr)
		}
		p.Workspaces = ws
	}
	if r := f.Reviewer; r != nil {
		rv := &bot.Reviewer{URL: r.URL.V, Timeout: permissions.DefaultReviewTimeout}
		u, err := url.Parse(r.URL.V)
		where := r.URL
		if where.Line == 0 {
			where = r.At
		}
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add(where, false, "reviewer url %q is not an http:// or https:// URL", r.URL.V)
		}
		if r.Timeout.V != "" {
			d, err := time.ParseDuration(r.Timeout.V)
			if err != nil || d <= 0 || d > permissions.MaxReviewTimeout {
				add(r.Timeout, false, "reviewer timeout must be a duration more than 0 and at most %s", permissions.MaxReviewTimeout)
			} else {
				rv.Timeout = d
			}
		}
		p.Reviewer = rv
	}
	if p.Mode == bot.ModeAuto && f.Reviewer == nil {
		add(f.Mode, true, "mode auto without a reviewer: every unresolved call goes to people, as in mode ask")
	}
	switch f.Caution.V {
	case "":
	case "allow":
		p.Caution = "allow"
	default:
		add(f.Caution, false, "caution must be allow (the hook allows caution calls) or left out (the agent's own rules apply), not %q", f.Caution.V)
	}
}

// CheckRuleFile validates a repository rule file (.signoff/permissions.yaml).
func CheckRuleFile(file string) (int, Problems) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, Problems{{File: file, Message: err.Error()}}
	}
	rules, ps := permissions.ParseFile(file, data)
	var out Problems
	for _, p := range ps {
		out = append(out, Problem{File: file, Line: p.Line, Column: p.Column, Message: p.Message})
	}
	for _, r := range rules {
		if r.Effect == bot.EffectAllow {
			out = append(out, Problem{File: file, Line: lineOf(r.Where), Column: colOf(r.Where), Warning: true,
				Message: fmt.Sprintf("%s %q: allow is ignored in a repository file (it is in the agent's reach, so it may only tighten)", r.Tool, r.Pattern)})
		}
	}
	return len(rules), out
}

func lineOf(where string) int { l, _ := lineCol(where); return l }
func colOf(where string) int  { _, c := lineCol(where); return c }

// lineCol reads the line and column back from "file:line:col".
func lineCol(where string) (int, int) {
	parts := strings.Split(where, ":")
	if len(parts) < 3 {
		return 0, 0
	}
	l, ok1 := atoi(parts[len(parts)-2])
	c, ok2 := atoi(parts[len(parts)-1])
	if !ok1 || !ok2 {
		return 0, 0
	}
	return l, c
}
