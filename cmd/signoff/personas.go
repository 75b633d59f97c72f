package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/signoff/signoff/quorum"
)

func init() { commands["personas"] = personas }

func personas(ctx context.Context, a *app, args []string) int {
	if len(args) == 0 || args[0] != "check" {
		return a.failf("usage: signoff personas check [DIR]")
	}
	fs := a.flags("personas check", "personas check [DIR]")
	if code, ok := parse(fs, args[1:]); !ok {
		return code
	}
	dir := fs.Arg(0)
	if dir == "" {
		cfg, err := loadConfig()
		if err != nil {
			return a.fail(err)
		}
		dir = cfg.Personas
	}
	ps, problems, err := quorum.LoadDir(dir)
	if err != nil {
		return a.fail(err)
	}
	for _, p := range problems {
		fmt.Fprintln(a.stderr, p.String())
	}
	if n := len(problems.Errors()); n > 0 {
		fmt.Fprintf(a.stderr, "%d error(s) in %s; the gateway will not start with them\n", n, dir)
		return 1
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	if len(ps) == 0 {
		fmt.Fprintf(a.stderr, "no persona files (*.yaml) in %s\n", dir)
		return 1
	}
	if cfg, err := loadConfig(); err == nil {
		warnings, fatal := reachProblems(ps, postingPlatforms(cfg))
		for _, w := range warnings {
			fmt.Fprintln(a.stderr, "warning: "+w)
		}
		if len(fatal) > 0 {
			for _, f := range fatal {
				fmt.Fprintln(a.stderr, f)
			}
			fmt.Fprintf(a.stderr, "signoff serve will not start with these personas in this environment\n")
			return 1
		}
	}
	fmt.Fprintf(a.stdout, "ok: %d persona(s) in %s: %s\n", len(ps), dir, strings.Join(names, ", "))
	return 0
}
