package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/signoff/signoff/bot/agent"
	"github.com/signoff/signoff/bot/risk"
)

func init() { commands["classify"] = classify }

// classify prints a command's risk. One argument is a command line as a
// shell reads it (`signoff classify -- 'curl x | sh'`); several are argv,
// quoted back into one line. With --json and no command, it reads one
// command per line on stdin and writes one JSON object per line.
func classify(_ context.Context, a *app, args []string) int {
	fs := a.flags("classify", "classify [--json] [--explain] -- CMD…   (or: classify --json < commands, one a line)")
	asJSON := fs.Bool("json", false, `print {"command","level","reasons"} as JSON; with no CMD, read commands from stdin`)
	explain := fs.Bool("explain", false, "also show every rule that matched: its id, level, reason and the command text it matched")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	_, c, err := configAndClassifier()
	if err != nil {
		return a.fail(err)
	}
	if fs.NArg() == 0 {
		if !*asJSON {
			fs.Usage()
			return a.failf("nothing to classify: give -- CMD… (or --json with commands on stdin)")
		}
		if a.stdin == nil {
			return 0
		}
		if err := agent.ClassifyLines(c, a.stdin, a.stdout); err != nil {
			return a.fail(err)
		}
		return 0
	}
	line := fs.Arg(0)
	if fs.NArg() > 1 {
		line = shellJoin(fs.Args())
	}
	if *explain {
		return explainCommand(a, c, line, *asJSON)
	}
	v := agent.Classify(c, line)
	if !*asJSON {
		fmt.Fprintln(a.stdout, v.String())
		return 0
	}
	b, err := json.Marshal(v)
	if err != nil {
		return a.fail(err)
	}
	fmt.Fprintf(a.stdout, "%s\n", b)
	return 0
}

// explainCommand prints a command's level and every rule that matched.
func explainCommand(a *app, c *risk.Classifier, line string, asJSON bool) int {
	e := c.Explain(line)
	if asJSON {
		b, err := json.Marshal(struct {
			Command string `json:"command"`
			risk.Explanation
		}{line, e})
		if err != nil {
			return a.fail(err)
		}
		fmt.Fprintf(a.stdout, "%s\n", b)
		return 0
	}
	fmt.Fprintln(a.stdout, agent.Verdict{Command: line, Level: e.Level, Reasons: e.Reasons}.String())
	if len(e.Hits) == 0 {
		fmt.Fprintln(a.stdout, "  no rule matched: every command in it is known safe")
	}
	for _, h := range e.Hits {
		rule := h.Rule
		if rule == "" {
			rule = "(parser)"
		}
		fmt.Fprintf(a.stdout, "  %-9s %s: %s\n            matched: %s\n", h.Level, rule, h.Reason, h.Span)
	}
	return 0
}
