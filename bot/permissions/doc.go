// Package permissions decides, in one place, whether an agent's call may
// run (POST /v1/check, docs/design.md#permission-rules-modes-and-grants): permission rules in layers, modes, the
// reviewer endpoint of mode auto, grants, and the classifier's level.
//
// Rules have the fx shape — tool → wildcard pattern → allow | deny | ask,
// "*" for any tool — and within a layer the last matching rule wins
// (Claude Code instead ranks deny > ask > allow). Layers: the persona's
// own rules; its workspaces (absolute path globs; they take precedence);
// and a repository's .signoff/permissions.yaml, which is in the agent's
// reach and so only tightens: its allow rules are ignored.
//
// Order of decision: a deny rule denies; a live grant that covers the call
// allows; an ask rule asks; an allow rule allows, but a dangerous call only
// when the rule is the exact command; otherwise by level — safe runs,
// caution runs and is audited, dangerous asks. Mode plan denies whatever is
// not safe and asks no one; mode auto first asks the persona's reviewer,
// whose allow never lets a dangerous call through. Every call resolved
// without a person is one audit record naming what resolved it.
//
// It imports bot, bot/grants and go-yaml's AST; it must not import the
// stores, the adapters, the HTTP API or the risk package (the classifier
// is an interface).
package permissions
