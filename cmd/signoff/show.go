package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/signoff/signoff/bot/wait"
)

func init() { commands["show"] = show }

// show prints one request whole (or as JSON).
func show(ctx context.Context, a *app, args []string) int {
	fs := a.flags("show", "show [--json] ID")
	asJSON := fs.Bool("json", false, "the request as the API returns it")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return a.failf("show takes one request id (see `signoff pending`)")
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	r, err := cfg.client(a.stderr).Get(ctx, fs.Arg(0))
	if err != nil {
		return a.fail(err)
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return a.fail(err)
		}
		return 0
	}
	fmt.Fprint(a.stdout, wait.Describe(r, time.Now()))
	return 0
}
