package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/permissions"
)

func init() { commands["check"] = check }

// Exit codes of check and permissions explain.
const (
	checkAllow = 0
	checkDeny  = 1
	checkAsk   = 3
)

// check asks the gateway whether a call may run and prints its decision:
// exit 0 allow, 1 deny, 3 ask (people would be asked), 2 usage or server.
func check(ctx context.Context, a *app, args []string) int {
	return checkOrExplain(ctx, a, "check", args, false)
}

func checkOrExplain(ctx context.Context, a *app, name string, args []string, explain bool) int {
	fs := a.flags(name, name+" [--json] [--persona P] [--cwd DIR] [--mode plan|ask] -- CMD…   (or --tool NAME --input JSON)")
	asJSON := fs.Bool("json", false, "print the decision object as JSON")
	ch := checkFlags(fs)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	if err := ch.fill(fs, cfg.Persona); err != nil {
		fs.Usage()
		return a.fail(err)
	}
	ch.c.Explain = explain
	res, err := cfg.client(a.stderr).Check(ctx, ch.c)
	if err != nil {
		return a.fail(err)
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		if !explain {
			res.Layers = nil
		}
		if err := enc.Encode(res); err != nil {
			return a.fail(err)
		}
	} else {
		fmt.Fprint(a.stdout, res.Text(explain))
	}
	switch res.Decision {
	case "allow":
		return checkAllow
	case "ask":
		return checkAsk
	}
	return checkDeny
}

// checkInput is a check as the flags describe it.
type checkInput struct {
	c       permissions.Check
	persona *string
	cwd     *string
	mode    *string
	tool    *string
	input   *string
	kind    *string
}

func checkFlags(fs *flag.FlagSet) *checkInput {
	return &checkInput{
		persona: fs.String("persona", "", "persona whose rules apply (default $SIGNOFF_PERSONA or demo)"),
		cwd:     fs.String("cwd", "", "directory the call is made from (default: this one)"),
		mode:    fs.String("mode", "", "ask for a stricter mode than the persona's (plan, ask)"),
		tool:    fs.String("tool", "", "a tool call instead of a command: the tool's name (Edit, apply_patch, mcp__x__y)"),
		input:   fs.String("input", "", "the tool's input, a JSON object"),
		kind:    fs.String("kind", "", "command (default), network (host:port) or text"),
	}
}

func (in *checkInput) fill(fs *flag.FlagSet, defPersona string) error {
	c := &in.c
	c.Persona, c.Mode, c.Tool = *in.persona, *in.mode, *in.tool
	if c.Persona == "" {
		c.Persona = defPersona
	}
	c.Cwd = *in.cwd
	if c.Cwd == "" {
		if wd, err := os.Getwd(); err == nil {
			c.Cwd = wd
		}
	}
	if c.Cwd != "" && !isAbs(c.Cwd) {
		abs, err := filepath.Abs(c.Cwd)
		if err != nil {
			return fmt.Errorf("--cwd %s: %v", c.Cwd, err)
		}
		c.Cwd = abs
	}
	switch {
	case c.Tool != "":
		if fs.NArg() > 0 {
			return fmt.Errorf("give either --tool NAME --input JSON or -- CMD…, not both")
		}
		if *in.input != "" && !json.Valid([]byte(*in.input)) {
			return fmt.Errorf("--input is not valid JSON")
		}
		c.Input = json.RawMessage(*in.input)
	case fs.NArg() == 0:
		return fmt.Errorf("nothing to check: give -- CMD… or --tool NAME --input JSON")
	case fs.NArg() == 1:
		c.Action = fs.Arg(0)
	default:
		c.Action = shellJoin(fs.Args())
	}
	if *in.kind != "" {
		c.Kind = bot.Kind(*in.kind)
	}
	return nil
}

func isAbs(p string) bool { return filepath.IsAbs(p) }
