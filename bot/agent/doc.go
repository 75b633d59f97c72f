// Package agent is what signoff's agent-facing commands do: classify
// commands (one, or a stream of lines as JSON), gate a command before it
// runs (exec), answer a Claude Code or Codex PreToolUse hook, and serve
// the MCP tools request_approval and classify.
//
// Every path fails closed. A dangerous action runs only when the gateway
// says approved; an error, an unreachable gateway, a malformed input, a
// timeout or an interrupted wait is a deny. Safe and caution actions run
// without asking (docs/design.md#mechanical-risk-classification: caution "runs, logged").
//
// It speaks bot types and takes the gateway and the classifier as small
// interfaces (Gateway, Classifier), so the CLI hands it the HTTP client
// and the risk classifier and tests hand it a gateway of their own. It
// imports bot, bot/permissions (the Check it sends to /v1/check and the
// Result it acts on) and bot/wait (the waiting display), and nothing else
// of the module: not the HTTP client, the store or the classifier. It
// reads no environment and no configuration: cmd/signoff does the wiring.
package agent
