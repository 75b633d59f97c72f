package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/signoff/signoff/signing"
)

func init() { commands["audit"] = audit }

func audit(ctx context.Context, a *app, args []string) int {
	if len(args) == 0 || args[0] != "verify" {
		return a.failf("usage: signoff audit verify [--signer NPUB] [PATH]")
	}
	fs := a.flags("audit verify", "audit verify [--signer NPUB] [PATH]")
	signer := fs.String("signer", "", "require every record to be signed by this gateway key (npub or hex)")
	if code, ok := parse(fs, args[1:]); !ok {
		return code
	}
	path := fs.Arg(0)
	if path == "" {
		cfg, err := loadConfig()
		if err != nil {
			return a.fail(err)
		}
		path = cfg.AuditPath
	}
	want := ""
	if *signer != "" {
		pk, err := signing.ParsePublicKey(*signer)
		if err != nil {
			return a.failf("--signer: %v", err)
		}
		want = pk
	}
	f, err := os.Open(path)
	if err != nil {
		return a.failf("cannot open the audit log: %v", err)
	}
	defer f.Close()
	n, err := signing.VerifyAudit(f, want)
	if ce, ok := errors.AsType[*signing.ChainError](err); ok {
		fmt.Fprintf(a.stdout, "BROKEN: %s: %s\n", path, ce.Error())
		fmt.Fprintf(a.stdout, "%d record(s) before it are intact\n", n)
		return 1
	}
	if err != nil {
		return a.fail(err)
	}
	fmt.Fprintf(a.stdout, "ok: %s: %d record(s), chain intact, every signature valid\n", path, n)
	return 0
}
