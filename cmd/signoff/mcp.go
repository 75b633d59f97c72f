package main

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/signoff/signoff/bot/agent"
)

func init() { commands["mcp"] = mcpServe }

// mcpServe runs the MCP server on stdin/stdout until the client hangs up.
// stdout carries the protocol only: logs go to stderr.
func mcpServe(ctx context.Context, a *app, args []string) int {
	fs := a.flags("mcp", "mcp [--persona P]   (an MCP server on stdio)")
	persona := fs.String("persona", "", "the only persona calls may ask, set in the server's args (default "+defaultPersona+"; $SIGNOFF_PERSONA is ignored)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	cfg, c, err := configAndClassifier()
	if err != nil {
		return a.fail(err)
	}
	log, _ := cfg.logger(a.stderr) // an unreadable level logs at info
	// Always locked: a call naming another persona is the agent choosing
	// its electorate, as SIGNOFF_PERSONA would be; it is refused.
	p := settingsPersona(a.stderr, *persona, "the MCP server's")
	client := requester(cfg, a.stderr)
	s := agent.NewMCPServer(agent.MCPOptions{
		Gateway: client, Checker: client, Classifier: c, Persona: p, LockPersona: true, Logger: log,
		Verify: cfg.verifier(a.stderr), PinCheck: cfg.pinCheck(),
	})
	stdin := a.stdin
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	err = s.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{a.stdout}})
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
		return a.fail(err)
	}
	return 0
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
