// Command signoff is the approval gateway for AI agents and the terminal
// client people use to answer it. Each subcommand lives in its own file;
// this one dispatches. Flags, configuration and wiring only: the logic is
// in the packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/sandbox"
	"github.com/signoff/signoff/signing"
)

const usage = `signoff — an approval gateway for AI agents

usage:
  signoff serve                              run the gateway
  signoff request [flags] -- CMD…            ask for approval and wait (or --action TEXT)
  signoff init [--relay wss://…]             first run: your key, a persona owned by you, agent config
  signoff pending [--json] [--watch]         list requests waiting for an answer; --watch: live, bell, desktop
  signoff console [--admin] [--no-open]      the web console's link (a read token and the pinned key in it)
  signoff show [--json] ID                   one request whole: action, votes, who may still answer
  signoff withdraw [--reason R] ID           take back a pending request
  signoff publish [--persona P] TEXT         post a plain message on the persona's channels (scope publish)
  signoff approve|deny [--reason R] ID       answer with your own signed Nostr reaction
  signoff approve|deny --bunker URL ID       the same, signed on your phone (a NIP-46 remote signer)
  signoff keygen [--out FILE] | --show       make your key for approve/deny (--show: your npub again)
  signoff approve --always ID                approve and don't ask again (a grant, when you may grant)
  signoff check [--json] [--cwd DIR] -- CMD… may this call run? allow (0), deny (1), ask (3)
  signoff permissions explain|check          every rule layer for a call; validate rule files
  signoff grants [--json] | grants revoke ID list or end "don't ask again" grants
  signoff personas check [DIR]               validate persona files
  signoff audit verify [--witness RELAY] [PATH]  check the audit chain: links, signed checkpoints, cuts and forks against the witnesses
  signoff audit export [--out PATH]          write the whole chain (from the store) for offline verify
  signoff bench --spawn [--concurrency N] [--duration D | -n N]   load generator: the vote path beside its floor
  signoff healthcheck [--ready]              exit 0 if the gateway at SIGNOFF_URL is up (ready)
  signoff classify [--json] -- CMD…          risk of a shell command (stdin with --json)
  signoff exec [--persona P] -- CMD…         run; ask first when dangerous
  signoff hook claude-code                   Claude Code PreToolUse hook (JSON on stdin)
  signoff hook codex                         Codex PreToolUse hook (JSON on stdin; it honours deny only)
  signoff mcp                                MCP server on stdio (request_approval, classify)
  signoff tokens [create|revoke]             list, make (printed once) and revoke API tokens, signed with your key
  signoff ext install MANIFEST [--yes]       show what an extension asks for, then make its token
  signoff run [--persona P] [--workspace DIR] -- CMD…   start an agent in the sandbox (walls and doors)
  signoff doctor                             check the sandbox's kernel parts, the gateway and the pin
  signoff proxy [--listen ADDR] [--persona P] the egress proxy (HTTPS_PROXY / HTTP_PROXY for the agent)
  signoff net request|requests|approve|deny|policy   network access requests and policy revisions

  signoff version | --version                this binary's version, commit and Go version
  signoff completion bash|zsh|fish           shell completion script (e.g. source <(signoff completion bash))

Exit codes: 0 approved / ok (and --help), 1 denied, expired or check failed, 2 usage or server error.
Configuration comes from SIGNOFF_* environment variables (signoff serve --help lists them).
`

// app carries what a subcommand may touch, so tests can run the real
// commands in-process.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// ready, when set, is told the address serve listens on.
	ready func(addr string)
	// auditOptions, when set, may change how serve opens its audit log,
	// and auditOpened is given the log (bench --spawn reads its stats).
	auditOptions func(*signing.AuditOptions)
	auditOpened  func(*signing.AuditLog)
}

type command func(ctx context.Context, a *app, args []string) int

var commands = map[string]command{}

func main() {
	if sandbox.IsStage(os.Args[1:]) {
		sandbox.RunStage(os.Args[1:]) // inside signoff run's namespaces; never returns
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	code := a.run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

func (a *app) run(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(a.stdout, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args[0] = "version"
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(a.stderr, "signoff: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if len(args) == 2 && (args[1] == "-h" || args[1] == "--help" || args[1] == "help") {
		// Help was asked for: what the command printed is its usage,
		// whichever way it says so.
		cmd(ctx, a, args[1:])
		return 0
	}
	return cmd(ctx, a, args[1:])
}

// flags returns a FlagSet that reports to a's stderr.
func (a *app) flags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.Usage = func() {
		fmt.Fprintf(a.stderr, "usage: signoff %s\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags. When it returns false the command should exit with
// code: 0 after -h, 2 after bad usage (the flag package printed why).
func parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	return 0, true
}

// fail prints err for a person and returns the exit code for it.
func (a *app) fail(err error) int {
	msg := err.Error()
	if e, ok := errors.AsType[*bot.Error](err); ok {
		msg = e.Message
	}
	fmt.Fprintf(a.stderr, "signoff: %s\n", msg)
	if scopes := missingScopes(msg); scopes != "" {
		fmt.Fprintf(a.stderr, "  a token that may: signoff tokens create --name me --scopes %s (run with an admin token; give the new one as SIGNOFF_TOKEN)\n", scopes)
	}
	return 2
}

// missingScopes reads the scopes a "token … lacks scope a or b" error
// names, comma-separated for tokens create ("" when it is not one).
func missingScopes(msg string) string {
	_, after, ok := strings.Cut(msg, "lacks scope ")
	if !ok {
		return ""
	}
	after, _, _ = strings.Cut(after, ";")
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(after), " or ", " ")), ",")
}

func (a *app) failf(format string, args ...any) int {
	fmt.Fprintf(a.stderr, "signoff: "+format+"\n", args...)
	return 2
}
