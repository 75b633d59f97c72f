package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/signoff/signoff/bot"
)

func init() { commands["pending"] = pending }

func pending(ctx context.Context, a *app, args []string) int {
	fs := a.flags("pending", "pending")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	rs, err := cfg.client(a.stderr).List(ctx, bot.Filter{Status: bot.Pending})
	if err != nil {
		return a.fail(err)
	}
	if len(rs) == 0 {
		fmt.Fprintln(a.stderr, "nothing is waiting for an answer")
		return 0
	}
	now := time.Now()
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPERSONA\tAGE\tLEFT\tVOTES\tRISK\tACTION — REASON")
	for _, r := range rs {
		counted := 0
		for _, v := range r.Votes {
			if v.Result == bot.Counted {
				counted++
			}
		}
		what := oneLine(bot.Escape(r.Action), 60)
		if r.Reason != "" {
			what += " — " + oneLine(bot.Escape(r.Reason), 40)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, bot.Escape(r.Persona),
			now.Sub(r.CreatedAt).Round(time.Second), max(r.Deadline.Sub(now), 0).Round(time.Second), counted, r.Level, what)
	}
	tw.Flush()
	return 0
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
