package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/agent"
)

func init() { commands["hook"] = hook }

// hookAgents are the agents whose PreToolUse hook signoff answers; Codex
// uses Claude Code's schema.
var hookAgents = map[string]string{"claude-code": "Claude Code", "codex": "Codex"}

// hook answers a PreToolUse hook: hook JSON on stdin, decision JSON on
// stdout, exit 0. Every failure — bad flags, bad configuration, bad
// input, the gateway unreachable, no answer in time — prints a deny,
// because a hook that exits with any code but 0 or 2 lets the tool run.
func hook(ctx context.Context, a *app, args []string) int {
	if len(args) == 0 || hookAgents[args[0]] == "" {
		fmt.Fprint(a.stderr, "usage: signoff hook claude-code|codex [--persona P] [--timeout D] [--caution ask]\n"+
			"  a PreToolUse hook: hook JSON on stdin, a decision on stdout\n")
		return 2
	}
	// Codex honours only deny from a PreToolUse hook; allow or ask fail the
	// hook and the tool runs. So for Codex: deny, or nothing at all.
	h := &agent.Hook{Agent: hookAgents[args[0]], Log: a.stderr, DenyOnly: args[0] == "codex"}
	fs := a.flags("hook "+args[0], "hook "+args[0]+" [--persona P] [--timeout D] [--caution ask]")
	persona := fs.String("persona", "", "persona whose owners decide, set in the hook's settings (default "+defaultPersona+"; $SIGNOFF_PERSONA is ignored)")
	fs.DurationVar(&h.Timeout, "timeout", agent.DefaultHookTimeout, "longest wait for people; keep it below the hook timeout in the agent's settings")
	fs.StringVar(&h.Caution, "caution", "", "ask: never allow caution calls here (the agent's own rules decide); default: the persona's caution setting")
	code, ok := parse(fs, args[1:])
	switch {
	case !ok && code == 0: // -h
		return 0
	case !ok:
		return hookDeny(a, "bad flags for signoff hook (see the hook's stderr); not allowed")
	case fs.NArg() > 0:
		return hookDeny(a, "signoff hook takes no arguments; not allowed")
	case h.Caution != "" && h.Caution != agent.Ask:
		return hookDeny(a, "--caution must be ask (or left out: the persona decides); not allowed")
	}
	cfg, c, err := configAndClassifier()
	if err != nil {
		return hookDeny(a, err.Error()+"; not allowed")
	}
	client := requester(cfg, a.stderr)
	h.Classifier, h.Gateway, h.Checker, h.Persona = c, client, client, settingsPersona(a.stderr, *persona, "the hook's")
	h.Verify = cfg.verifier(a.stderr)
	h.PinCheck = cfg.pinCheck()
	if err := h.Run(ctx, a.stdin, a.stdout); err != nil {
		fmt.Fprintf(a.stderr, "signoff: writing the decision: %v\n", err)
		return 2 // blocks the tool: the decision could not be told
	}
	return 0
}

func hookDeny(a *app, reason string) int {
	fmt.Fprintf(a.stderr, "signoff: %s\n", reason)
	if err := agent.WriteHookDecision(a.stdout, agent.HookDecision{Decision: agent.Deny, Reason: "signoff: " + reason}); err != nil {
		return 2
	}
	return 0
}

// defaultPersona is the persona the hook and the MCP server ask when their
// settings name none (and SIGNOFF_PERSONA's default for the commands an
// agent runs itself).
const defaultPersona = "demo"

// settingsPersona is the persona of a command a person configured for the
// agent — the hook (the agent's hook settings) and the MCP server (its
// args in .mcp.json): flag, from those settings, else defaultPersona. The
// agent controls its own environment, so SIGNOFF_PERSONA there would let it
// pick its electorate (one with loose rules, or one it owns); it is
// ignored, and said so once on stderr when it names another persona.
func settingsPersona(stderr io.Writer, flag, whose string) string {
	p := flag
	if p == "" {
		p = defaultPersona
	}
	if env := os.Getenv("SIGNOFF_PERSONA"); env != "" && env != p {
		fmt.Fprintf(stderr, "signoff: ignoring SIGNOFF_PERSONA=%s from the environment: %s persona comes only from --persona in its settings (asking persona %s)\n",
			clipEnv(bot.Escape(env)), whose, bot.Escape(p))
	}
	return p
}

// clipEnv shortens an escaped value for a one-line message.
func clipEnv(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}
