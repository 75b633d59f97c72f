package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/tokens"
)

func init() { commands["ext"] = ext }

const extUsage = `usage:
  signoff ext install MANIFEST [--yes] [--expires 30d] [--json]
                          show what the extension asks for; make its token once you type yes
  signoff ext list        extensions installed (their tokens)
  signoff ext remove NAME revoke the extension's token`

func ext(ctx context.Context, a *app, args []string) int {
	if len(args) == 0 {
		return a.failf("%s", extUsage)
	}
	switch args[0] {
	case "install":
		return extInstall(ctx, a, args[1:])
	case "list":
		return extList(ctx, a, args[1:])
	case "remove":
		return extRemove(ctx, a, args[1:])
	case "-h", "--help", "help":
		fmt.Fprintln(a.stdout, extUsage)
		return 0
	}
	return a.failf("unknown ext command %q\n%s", args[0], extUsage)
}

func extInstall(ctx context.Context, a *app, args []string) int {
	fs := a.flags("ext install", "ext install MANIFEST [--yes] [--expires 30d] [--json]")
	yes := fs.Bool("yes", false, "agree without being asked (for scripts: read the consent block first)")
	expires := fs.String("expires", "", "expiry of the extension's token such as 30d (default: never)")
	asJSON := fs.Bool("json", false, `print {"name":…,"token":…}`)
	if code, ok := parse(fs, interspersed(args)); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return a.failf("usage: signoff ext install MANIFEST [--yes]  (MANIFEST is the extension's signoff.json)")
	}
	path := fs.Arg(0)
	data, err := readManifest(path)
	if err != nil {
		return a.fail(err)
	}
	m, err := tokens.ParseManifest(data)
	if err != nil {
		return a.failf("%s: %s", path, err)
	}
	// The consent block goes to stderr so stdout stays the token alone.
	fmt.Fprint(a.stderr, m.Consent())
	if !*yes {
		if !isTerminal(a.stdin) {
			return a.failf("no terminal to ask on, so nothing was installed: read the block above and run again with --yes to agree")
		}
		fmt.Fprint(a.stderr, "Type yes to create its token: ")
		line, _ := bufio.NewReader(a.stdin).ReadString('\n')
		if strings.TrimSpace(line) != "yes" {
			fmt.Fprintln(a.stderr, "not installed: nothing was created")
			return 1
		}
	}
	spec := m.Spec()
	n := httpapi.NewToken{Name: spec.Name, Scopes: strings.Split(tokens.Join(spec.Scopes), ","), Personas: spec.Personas, Network: spec.Network, Extension: spec.Ext, Expires: *expires}
	return createAndPrint(ctx, a, n, *asJSON)
}

// interspersed moves flags after the manifest path in front of it, so
// `ext install signoff.json --yes` works as a person would type it.
func interspersed(args []string) []string {
	var flags, rest []string
	for _, s := range args {
		if strings.HasPrefix(s, "-") {
			flags = append(flags, s)
		} else if len(flags) > 0 && (flags[len(flags)-1] == "--expires" || flags[len(flags)-1] == "-expires") {
			flags = append(flags, s)
		} else {
			rest = append(rest, s)
		}
	}
	return append(flags, rest...)
}

func readManifest(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, tokens.MaxManifest+1))
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return data, nil
}

func extList(ctx context.Context, a *app, args []string) int {
	fs := a.flags("ext list", "ext list [--json]")
	asJSON := fs.Bool("json", false, "print JSON")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	adm, done, err := tokenAdmin(ctx, a)
	if err != nil {
		return a.fail(err)
	}
	defer done()
	ts, err := adm.Tokens(ctx)
	if err != nil {
		return a.fail(err)
	}
	var exts []*tokens.Token
	for _, t := range ts {
		if t.Ext != "" {
			exts = append(exts, t)
		}
	}
	if len(exts) == 0 && !*asJSON {
		fmt.Fprintln(a.stderr, "no extension installed (signoff ext install signoff.json)")
		return 0
	}
	printTokens(a, exts, *asJSON, true)
	return 0
}

func extRemove(ctx context.Context, a *app, args []string) int {
	fs := a.flags("ext remove", "ext remove NAME")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return a.failf("usage: signoff ext remove NAME")
	}
	adm, done, err := tokenAdmin(ctx, a)
	if err != nil {
		return a.fail(err)
	}
	defer done()
	ts, err := adm.Tokens(ctx)
	if err != nil {
		return a.fail(err)
	}
	name := fs.Arg(0)
	for _, t := range ts {
		if t.Ext == name {
			if err := adm.RevokeToken(ctx, t.Name); err != nil {
				return a.fail(err)
			}
			fmt.Fprintf(a.stderr, "extension %q removed: its token is revoked on every replica\n", name)
			return 0
		}
	}
	return a.failf("no extension named %q is installed (signoff ext list)", name)
}
