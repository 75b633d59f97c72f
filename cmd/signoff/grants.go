package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/signoff/signoff/bot/grants"
)

func init() { commands["grants"] = grantsCommand }

// grantsCommand lists live "don't ask again" grants, or revokes one.
func grantsCommand(ctx context.Context, a *app, args []string) int {
	if len(args) > 0 && args[0] == "revoke" {
		return revokeGrant(ctx, a, args[1:])
	}
	fs := a.flags("grants", "grants [--json] [--persona P]   |   grants revoke ID")
	asJSON := fs.Bool("json", false, "print the grants as JSON")
	persona := fs.String("persona", "", "only this persona's grants")
	fs.Usage = func() {
		fmt.Fprintf(a.stderr, "usage: signoff grants [--json] [--persona P]   |   grants revoke ID\n\n%s\n\nflags:\n", grants.Covered)
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return a.failf("unexpected %q (to end a grant: signoff grants revoke ID)", fs.Arg(0))
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	gs, err := cfg.client(a.stderr).Grants(ctx, *persona)
	if err != nil {
		return a.fail(err)
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string][]grants.Grant{"grants": gs}); err != nil {
			return a.fail(err)
		}
		return 0
	}
	if len(gs) == 0 {
		fmt.Fprintln(a.stdout, "no live grants")
		return 0
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPERSONA\tSCOPE\tBY\tCREATED\tEXPIRES\tUSES")
	for _, g := range gs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", g.ID, g.Persona, oneLineText(g.Text), strings.Join(g.By, ","),
			g.Created.UTC().Format(time.RFC3339), g.Expires.UTC().Format(time.RFC3339), g.Uses)
	}
	tw.Flush()
	return 0
}

func revokeGrant(ctx context.Context, a *app, args []string) int {
	fs := a.flags("grants revoke", "grants revoke ID")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return a.failf("grants revoke takes one grant id (see `signoff grants`)")
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	g, err := cfg.client(a.stderr).RevokeGrant(ctx, fs.Arg(0))
	if err != nil {
		return a.fail(err)
	}
	fmt.Fprintf(a.stdout, "revoked grant %s (%s, persona %s, used %d times); it covers nothing from now on, on every replica\n", g.ID, oneLineText(g.Text), g.Persona, g.Uses)
	return 0
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }
