package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/signoff/signoff/quorum"
	"github.com/signoff/signoff/signing"
)

func init() { commands["init"] = initCommand }

// userPersonasDir is where init writes the user's persona and where serve
// looks when the working directory has no configs/personas.
func userPersonasDir() string {
	d, err := os.UserConfigDir()
	if err != nil {
		d = userDataDir()
	}
	return filepath.Join(d, "signoff", "personas")
}

var personaNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// initCommand sets a new user up: their key (kept if there is one), a
// persona they own, and the agent configuration to paste. Run it again
// and it changes nothing, saying what is already there.
func initCommand(ctx context.Context, a *app, args []string) int {
	fs := a.flags("init", "init [--persona NAME] [--name YOU] [--relay wss://… ]")
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	persona := fs.String("persona", cfg.Persona, "the persona to write, owned by you")
	name := fs.String("name", defaultPersonName(), "your name on cards and in votes")
	var relays []string
	fs.Func("relay", "a Nostr relay (wss://…) the persona posts requests to, so you can answer from a phone (repeat for more)", func(v string) error {
		if !strings.HasPrefix(v, "wss://") && !strings.HasPrefix(v, "ws://") {
			return fmt.Errorf("%q: a relay is a wss:// address", v)
		}
		relays = append(relays, v)
		return nil
	})
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.failf("init takes no arguments")
	}
	if !personaNameRE.MatchString(*persona) {
		return a.failf("persona name %q: use lowercase letters, digits, - and _", *persona)
	}
	bin, err := os.Executable()
	if err != nil {
		return a.failf("cannot tell where this signoff binary is: %v", err)
	}
	if p, err := filepath.EvalSymlinks(bin); err == nil {
		bin = p
	}
	w := a.stdout

	// 1. The key: never overwritten.
	keyPath, _ := filepath.Abs(cfg.keyPath())
	key, made, err := ensureKey(keyPath)
	if err != nil {
		return a.fail(err)
	}
	if made {
		fmt.Fprintf(w, "✔ your key: wrote %s (mode 0600) — keep it secret; it signs your ✅ and ❌\n", keyPath)
	} else {
		fmt.Fprintf(w, "✔ your key: already at %s (kept)\n", keyPath)
	}
	if repo := gitWorkTree(filepath.Dir(keyPath)); repo != "" {
		fmt.Fprintf(w, "  ⚠ it is inside the git work tree %s, where an agent working there can read it: move it (SIGNOFF_KEY)\n", repo)
	}
	fmt.Fprintf(w, "  your npub: %s   (again later: signoff keygen --show)\n", key.Npub())

	// 2. A persona owned by the user, where serve finds it.
	dir := userPersonasDir()
	if cfg.Personas != "configs/personas" {
		dir = cfg.Personas // SIGNOFF_PERSONAS says where personas live
	}
	path := filepath.Join(dir, *persona+".yaml")
	switch data, err := os.ReadFile(path); {
	case err == nil:
		p, problems := quorum.ParsePersona(path, data)
		owned := false
		if p.Owner != nil {
			for _, id := range p.Owner.Identities {
				owned = owned || id.ID == key.PublicKey()
			}
		}
		switch {
		case len(problems.Errors()) > 0:
			fmt.Fprintf(w, "⚠ persona %s: %s exists but has errors (kept; see `signoff personas check %s`)\n", *persona, path, dir)
		case owned:
			fmt.Fprintf(w, "✔ persona %s: already at %s with you as owner (kept)\n", *persona, path)
		default:
			fmt.Fprintf(w, "⚠ persona %s: %s exists and you are not its owner (kept). Add to it:\n    owner:\n      name: %s\n      nostr: %s\n", *persona, path, *name, key.Npub())
		}
	case errors.Is(err, os.ErrNotExist):
		if err := writePersona(path, *persona, *name, key.Npub(), relays); err != nil {
			return a.fail(err)
		}
		where := "requests wait in the terminal (signoff pending)"
		if len(relays) > 0 {
			where = "requests wait in the terminal and on your Nostr relays"
		}
		fmt.Fprintf(w, "✔ persona %s: wrote %s — you (%s) are its owner; %s\n", *persona, path, *name, where)
	default:
		return a.failf("cannot read %s: %v", path, err)
	}
	if _, err := os.Stat("configs/personas"); err == nil && cfg.Personas == "configs/personas" {
		fmt.Fprintf(w, "  note: this directory has configs/personas (the example); `signoff serve` reads yours in %s instead (SIGNOFF_PERSONAS=configs/personas for the example)\n", dir)
	}

	// 3. How the person hears of a request, beyond the terminal.
	if len(relays) > 0 {
		fmt.Fprintf(w, "✔ phone: requests go to the Nostr relays %s as public notes (if the persona was written now)\n", strings.Join(relays, ", "))
	} else {
		fmt.Fprintf(w, "  phone: to answer from your phone, run init again with --relay wss://your.relay (a Nostr channel; see docs/notifications.md)\n")
	}
	fmt.Fprint(w, nostrPrivacyNote)
	fmt.Fprintf(w, "  hear of each request: `%s pending --watch` (bell, desktop notification), serve's log line, or a notify: command in the persona\n", bin)

	// 4. What to paste into the agent.
	fmt.Fprint(w, agentConfig(bin, *persona))
	fmt.Fprintf(w, `
Next: start the gateway, and leave it running:
  %s serve
Then, in another terminal, watch for requests:
  %s pending --watch
and in a third, try it:
  %s request --persona %s -- rm -rf /tmp/signoff-try
  %s approve ID     # the ID it prints
`, bin, bin, bin, *persona, bin)
	fmt.Fprintf(w, `
Until a token exists, calls from this machine need none (none of them can
make one). Close the API with a token only you can make: the command signs
the call with your key (%s), as persona %s's owner (the first token must
carry admin; admin alone does not let you list, show or approve requests):
  %s tokens create --name %s --scopes %s,admin
`, keyPath, *persona, bin, *name, strings.Join(personScopes, ","))
	return 0
}

// ensureKey reads the key at path, or makes one there when there is none.
func ensureKey(path string) (*signing.Key, bool, error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		k, err := signing.ParseKey(string(raw))
		if err != nil {
			return nil, false, fmt.Errorf("%s holds no valid key (%v); it is never overwritten: move it away or set SIGNOFF_KEY", path, err)
		}
		return k, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("cannot read %s: %v", path, err)
	}
	k := signing.NewKey()
	if err := signing.WriteKey(path, k); err != nil {
		return nil, false, err
	}
	return k, true, nil
}

func writePersona(path, name, owner, npub string, relays []string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	body := fmt.Sprintf(`# Written by `+"`signoff init`"+`: you own persona %s. signoff serve loads it at
# start; no API can change it. Add members, a quorum or channels (Slack,
# Discord, Nostr relays) here: see docs/personas.md.
name: %s
owner:
  name: %s
  nostr: %s
timeout: 5m
%s
# Hear of each request: a command run with the request as JSON on stdin
# (by the gateway that created it; argv, no shell; see docs/notifications.md).
# notify:
#   command: [curl, -fsS, -H, "Title: signoff", --data-binary, "@-", https://ntfy.example/your-topic]
#   timeout: 10s
`, name, name, owner, npub, personaChannels(relays))
	if _, problems := quorum.ParsePersona(path, []byte(body)); len(problems.Errors()) > 0 {
		return fmt.Errorf("the persona init would write is invalid: %v", problems.Errors())
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write persona: %w", err)
	}
	if _, err := f.WriteString(body); err != nil {
		f.Close()
		return fmt.Errorf("write persona: %w", err)
	}
	return f.Close()
}

// personaChannels is the channels block init writes: the terminal, and a
// Nostr channel on the relays the person named.
func personaChannels(relays []string) string {
	if len(relays) == 0 {
		return `channels:
  - terminal: {}
  # Answer from your phone: requests become PUBLIC notes on these relays.
  # - nostr:
  #     relays: [wss://relay.example.com]`
	}
	q := make([]string, len(relays))
	for i, r := range relays {
		q[i] = strconv.Quote(r)
	}
	return `channels:
  - terminal: {}
  # Requests are PUBLIC notes on these relays: anyone can read the action,
  # the reason and the persona. React ✅ (or reply "approve") from your phone.
  - nostr:
      relays: [` + strings.Join(q, ", ") + `]`
}

// nostrPrivacyNote is what init says of the phone route.
const nostrPrivacyNote = `  ⚠ on Nostr a request is a public note: the action, its reason, the persona (and any path or
    working directory in the action) are readable by anyone on those relays. Answer with a ✅ or ❌
    reaction from a client that lets you pick the reaction emoji (Amethyst, Damus, noStrudel), or
    reply "approve" / "deny" from any client; a plain like sends "+", which is ignored.
`

// personScopes is what a person's own commands need: pending and show
// (read:requests), request and withdraw (request), approve and deny
// (request, check or read:requests), the hook and exec (check), classify
// and publish.
var personScopes = []string{"request", "check", "read:requests", "classify", "publish"}

// agentConfig is what to paste into the agents: Claude Code's settings
// (failing closed), Codex's hooks file and feature flag, and MCP.
func agentConfig(bin, persona string) string {
	hook := func(agent string) string { return fmt.Sprintf("%s hook %s --persona %s", bin, agent, persona) }
	indent := func(v any) string {
		b, _ := json.MarshalIndent(v, "  ", "  ")
		return "  " + string(b)
	}
	entry := func(cmd string, onFailure bool) map[string]any {
		h := map[string]any{"type": "command", "command": cmd, "timeout": 600}
		if onFailure {
			h["onFailure"] = "block" // a hook that cannot start or times out blocks the call
		}
		m := map[string]any{"hooks": []any{h}}
		if onFailure {
			m["matcher"] = "*"
		}
		return map[string]any{"hooks": map[string]any{"PreToolUse": []any{m}}}
	}
	return fmt.Sprintf(`
Claude Code — merge into ~/.claude/settings.json ("onFailure": "block": a hook that cannot run blocks the call):
%s

Codex — ~/.codex/hooks.json (then review and trust it with /hooks):
%s
Codex — and in ~/.codex/config.toml:
  [features]
  hooks = true

MCP (Claude Code: claude mcp add signoff -- %s mcp --persona %s), or in .mcp.json:
  { "mcpServers": { "signoff": { "command": %q, "args": ["mcp", "--persona", %q] } } }
  (an MCP client's request timeout must outlast the persona's timeout: see docs/agents.md)
`, indent(entry(hook("claude-code"), true)), indent(entry(hook("codex"), false)), bin, persona, bin, persona)
}

// defaultPersonName is the login name, made safe for a persona file.
func defaultPersonName() string {
	n := os.Getenv("USER")
	if u, err := user.Current(); n == "" && err == nil {
		n = u.Username
	}
	n = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return -1
	}, n)
	if n == "" {
		return "you"
	}
	return n
}

// gitWorkTree returns the work tree above dir, if any.
func gitWorkTree(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}
