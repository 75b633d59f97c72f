package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/signoff/signoff/bot/permissions"
	"github.com/signoff/signoff/quorum"
)

func init() { commands["permissions"] = permissionsCommand }

const permissionsUsage = `usage:
  signoff permissions explain [--json] [--persona P] [--cwd DIR] -- CMD…   every layer, the rule, grant and decision
  signoff permissions explain … --tool NAME --input JSON
  signoff permissions check [DIR|FILE]    validate persona rules and .signoff/permissions.yaml files
`

func permissionsCommand(ctx context.Context, a *app, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, permissionsUsage)
		return 2
	}
	switch args[0] {
	case "explain":
		return checkOrExplain(ctx, a, "permissions explain", args[1:], true)
	case "check":
		return permissionsCheck(a, args[1:])
	}
	fmt.Fprint(a.stderr, permissionsUsage)
	return 2
}

// permissionsCheck validates rule files: a persona folder (every persona's
// permissions, workspaces, mode and reviewer), a repository (its
// .signoff/permissions.yaml), or one rule file.
func permissionsCheck(a *app, args []string) int {
	fs := a.flags("permissions check", "permissions check [DIR|FILE]")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	target := fs.Arg(0)
	if target == "" {
		cfg, err := loadConfig()
		if err != nil {
			return a.fail(err)
		}
		target = cfg.Personas
	}
	st, err := os.Stat(target)
	if err != nil {
		return a.failf("%v", err)
	}
	var (
		problems quorum.Problems
		summary  []string
	)
	repoFile := filepath.Join(target, permissions.RepoFile)
	if !st.IsDir() {
		repoFile = target
	}
	if _, err := os.Stat(repoFile); err == nil {
		n, ps := quorum.CheckRuleFile(repoFile)
		problems = append(problems, ps...)
		summary = append(summary, fmt.Sprintf("%d rule(s) in %s", n, repoFile))
	}
	if st.IsDir() {
		ps, pps, err := quorum.LoadDir(target)
		if err != nil {
			return a.fail(err)
		}
		problems = append(problems, pps...)
		rules := 0
		for _, p := range ps {
			rules += len(p.Permissions)
			for _, w := range p.Workspaces {
				rules += len(w.Rules)
			}
		}
		if len(ps) > 0 || len(pps) > 0 {
			summary = append(summary, fmt.Sprintf("%d persona(s) with %d rule(s) in %s", len(ps), rules, target))
		}
	}
	for _, p := range problems {
		fmt.Fprintln(a.stderr, p.String())
	}
	if n := len(problems.Errors()); n > 0 {
		fmt.Fprintf(a.stderr, "%d error(s)\n", n)
		return 1
	}
	if len(summary) == 0 {
		fmt.Fprintf(a.stderr, "no persona files and no %s in %s\n", permissions.RepoFile, target)
		return 1
	}
	for _, s := range summary {
		fmt.Fprintln(a.stdout, "ok: "+s)
	}
	return 0
}
