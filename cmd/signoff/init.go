package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
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
	fs := a.flags("init", "init [--persona NAME] [--name YOU]")
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	persona := fs.String("persona", cfg.Persona, "the persona to write, owned by you")
	name := fs.String("name", defaultPersonName(), "your name on cards and in votes")
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
		if err := writePersona(path, *persona, *name, key.Npub()); err != nil {
			return a.fail(err)
		}
		fmt.Fprintf(w, "✔ persona %s: wrote %s — you (%s) are its owner; requests wait in the terminal (signoff pending)\n", *persona, path, *name)
	default:
		return a.failf("cannot read %s: %v", path, err)
	}
	if _, err := os.Stat("configs/personas"); err == nil && cfg.Personas == "configs/personas" {
		fmt.Fprintf(w, "  ⚠ this directory has configs/personas, which `signoff serve` run here reads instead; run serve elsewhere or set SIGNOFF_PERSONAS=%s\n", dir)
	}

	// 3. What to paste into the agent.
	hook := fmt.Sprintf("%s hook claude-code --persona %s", bin, *persona)
	fmt.Fprintf(w, `
Claude Code — add to ~/.claude/settings.json:
  {
    "hooks": {
      "PreToolUse": [
        { "matcher": "*", "hooks": [ { "type": "command", "command": %q, "timeout": 600 } ] }
      ]
    }
  }

Codex — ~/.codex/hooks.json, the same with "command": %q,
  and in ~/.codex/config.toml:  [features] hooks = true   (then trust it with /hooks)

MCP (Claude Code: claude mcp add signoff -- %s mcp --persona %s), or in .mcp.json:
  { "mcpServers": { "signoff": { "command": %q, "args": ["mcp", "--persona", %q] } } }

Next: start the gateway, and leave it running:
  %s serve
Then, in another terminal, try it:
  %s request --persona %s -- rm -rf /tmp/signoff-try
  %s approve ID     # the ID it prints; or: %s pending

Until a token exists, calls from this machine need none (none of them can
make one). Close the API with a token only you can make: the command signs
the call with your key (%s), as persona %s's owner:
  %s tokens create --name me --scopes admin
`, hook, fmt.Sprintf("%s hook codex --persona %s", bin, *persona), bin, *persona, bin, *persona, bin, bin, *persona, bin, bin, keyPath, *persona, bin)
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

func writePersona(path, name, owner, npub string) error {
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
`, name, name, owner, npub)
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
