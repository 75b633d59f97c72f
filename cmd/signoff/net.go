package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/netpolicy"
	"github.com/signoff/signoff/signing"
)

func init() { commands["net"] = netCmd }

const netUsage = `usage:
  signoff net request --host H --port P [--program PATH] [--method M --path P] --reason R [--wait]
  signoff net requests [--all] [--json]
  signoff net approve ID [--save] [--dry-run] [--policy-from FILE]
  signoff net deny ID --reason R
  signoff net policy [--rev N] [--diff N] [--json]
`

func netCmd(ctx context.Context, a *app, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(a.stderr, netUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch args[0] {
	case "request":
		return netRequest(ctx, a, args[1:])
	case "requests":
		return netRequests(ctx, a, args[1:])
	case "approve":
		return netApprove(ctx, a, args[1:])
	case "deny":
		return netDeny(ctx, a, args[1:])
	case "policy":
		return netPolicy(ctx, a, args[1:])
	}
	fmt.Fprintf(a.stderr, "signoff net: unknown command %q\n%s", args[0], netUsage)
	return 2
}

func netRequest(ctx context.Context, a *app, args []string) int {
	fs := a.flags("net request", "net request --host H --port P [--program PATH] [--method M --path P] --reason R [--wait]")
	host := fs.String("host", "", "destination host")
	port := fs.Int("port", 0, "destination port")
	program := fs.String("program", "", "the program that will connect (its path)")
	method := fs.String("method", "", "one HTTP method (GET/HEAD: read-only; none: every method)")
	path := fs.String("path", "", "one path, with --method")
	reason := fs.String("reason", "", "why the agent needs it (shown to the people asked)")
	persona := fs.String("persona", "", "persona (default $SIGNOFF_PERSONA)")
	wait := fs.Bool("wait", false, "wait until a person decides, and print the decision")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.failf("net request takes flags only (unexpected %q)", fs.Arg(0))
	}
	if *host == "" || *port == 0 || strings.TrimSpace(*reason) == "" {
		fs.Usage()
		return a.failf("--host, --port and --reason are required")
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	if *persona == "" {
		*persona = cfg.Persona
	}
	c := cfg.client(a.stderr)
	f, err := c.FileNetRequest(ctx, httpapi.NetRequestBody{Persona: *persona, Host: *host, Port: *port, Program: *program, Method: *method, Path: *path, Reason: *reason})
	if err != nil {
		return a.fail(err)
	}
	fmt.Fprintln(a.stdout, printable(f.Message))
	if f.Request == nil || !*wait {
		return 0
	}
	r := f.Request
	for !r.Status.Final() {
		left := time.Until(r.Deadline).Round(time.Second)
		fmt.Fprintf(a.stderr, "waiting for a person to answer request %s (%s left)…\n", r.ID, left)
		if r, err = c.Wait(ctx, r.ID, min(30*time.Second, max(time.Second, left))); err != nil {
			return a.fail(err)
		}
	}
	switch r.Status {
	case bot.Approved:
		fmt.Fprintf(a.stdout, "%s: %s is open\n", bot.Outcome(r), netpolicy.Describe(f.Dest))
		return 0
	case bot.Denied:
		why := r.DecisionReason
		if l, err := c.NetRequests(ctx, false); err == nil {
			for _, it := range l.Requests {
				if it.ID == r.ID && it.DenyReason != "" {
					why = it.DenyReason
				}
			}
		}
		fmt.Fprintf(a.stdout, "%s\n", bot.Outcome(r))
		if why != "" {
			fmt.Fprintf(a.stdout, "reason: %s\nask for something narrower if the agent still needs it\n", printable(why))
		}
		return 1
	}
	fmt.Fprintln(a.stdout, bot.Outcome(r))
	return 1
}

func netRequests(ctx context.Context, a *app, args []string) int {
	fs := a.flags("net requests", "net requests [--all] [--json]")
	all := fs.Bool("all", false, "list the drafts too")
	asJSON := fs.Bool("json", false, "print JSON")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	l, err := cfg.client(a.stderr).NetRequests(ctx, *all)
	if err != nil {
		return a.fail(err)
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(l)
		return 0
	}
	fmt.Fprintf(a.stdout, "network requests (policy at revision %d):\n", l.Current)
	if len(l.Requests) == 0 {
		fmt.Fprintln(a.stdout, "  none")
	}
	for _, it := range l.Requests {
		fmt.Fprintf(a.stdout, "  %s  %-8s %s\n", it.ID, it.Status, it.Opens)
		fmt.Fprintf(a.stdout, "      reason: %s\n", printable(it.Reason))
		switch {
		case it.DenyReason != "":
			fmt.Fprintf(a.stdout, "      denied by %s: %s\n", strings.Join(it.DecidedBy, ", "), printable(it.DenyReason))
		case it.Status != bot.Pending && it.Decision != "":
			fmt.Fprintf(a.stdout, "      %s\n", printable(it.Decision))
		case it.Status != bot.Pending && len(it.DecidedBy) > 0:
			fmt.Fprintf(a.stdout, "      by %s\n", strings.Join(it.DecidedBy, ", "))
		case it.Outside:
			fmt.Fprintf(a.stdout, "      outside the network boundary: it can only be denied\n")
		}
	}
	if len(l.ByHost) > 0 {
		fmt.Fprintln(a.stdout, "refused by the proxy (drafts, by host):")
		for _, h := range l.ByHost {
			fmt.Fprintf(a.stdout, "  %-40s ×%d\n", h.Dest, h.Count)
		}
	}
	if *all {
		fmt.Fprintln(a.stdout, "drafts:")
		if len(l.Drafts) == 0 {
			fmt.Fprintln(a.stdout, "  none")
		}
		for _, d := range l.Drafts {
			filed := ""
			if d.Request != "" {
				filed = " (filed as " + d.Request + ")"
			}
			fmt.Fprintf(a.stdout, "  %s  ×%-4d %s%s\n", d.ID, d.Count, printable(d.Reason), filed)
		}
	} else if len(l.ByHost) > 0 {
		fmt.Fprintln(a.stdout, "(`signoff net requests --all` lists the drafts; `signoff net approve DRAFT-ID` files one)")
	}
	return 0
}

// signNetAnswer signs the person's answer to network request id, as
// approve does: nothing is signed until the request's event is the pinned
// gateway's and carries this request (a fake gateway could otherwise show
// a harmless host and have the person sign a reaction naming the event of
// another, dangerous request). On error it has printed why.
func signNetAnswer(ctx context.Context, a *app, cfg *config, c *httpapi.Client, id string, signer *personSigner, choice bot.Choice) (ev json.RawMessage, npub string, code int) {
	r, err := c.Get(ctx, id)
	if err != nil {
		return nil, "", a.fail(err)
	}
	pin, err := cfg.pin()
	if err != nil {
		return nil, "", a.failf("cannot check request %s: %v; nothing signed", r.ID, err)
	}
	signed, err := signing.VerifyRequestEvent(r, pin.Key)
	if err != nil {
		return nil, "", a.failf("%v; nothing signed", err)
	}
	ev, err = signer.react(ctx, a, signed, choice, "", func(n string) {
		npub = n
		fmt.Fprintf(a.stderr, "%s as %s:\n%s\n", map[bot.Choice]string{bot.Approve: "approve", bot.Deny: "deny"}[choice], n, bot.EscapeLines(signed.Content))
	})
	if err != nil {
		return nil, "", a.failf("%v", err)
	}
	return ev, npub, 0
}

func netApprove(ctx context.Context, a *app, args []string) int {
	fs := a.flags("net approve", "net approve ID [--save] [--dry-run] [--policy-from FILE] [--key FILE | --bunker bunker://…]")
	save := fs.Bool("save", false, "also write the rule into the policy file ($SIGNOFF_NET_POLICY), comments kept")
	dry := fs.Bool("dry-run", false, "show the change and the check; change nothing")
	from := fs.String("policy-from", "", "approve with this edited copy of the policy (checked first)")
	sf := addSignerFlags(fs)
	if code, ok := parse(fs, reorder(args)); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return a.failf("net approve takes one id (see `signoff net requests --all`)")
	}
	cfg, c, it, draft, err := findNetRequest(ctx, a.stderr, fs.Arg(0))
	if err != nil {
		return a.fail(err)
	}
	cur, err := c.Policy(ctx, 0)
	if err != nil {
		return a.fail(err)
	}
	dest := netpolicy.Dest{}
	if draft != nil {
		dest = draft.Dest
		fmt.Fprintf(a.stdout, "draft %s: %s\n", draft.ID, printable(draft.Reason))
	} else {
		dest = it.Dest
		fmt.Fprintf(a.stdout, "request %s (%s): %s\n  reason: %s\n", it.ID, it.Status, netpolicy.Describe(dest), printable(it.Reason))
		if it.Status != bot.Pending {
			return a.failf("request %s is already %s", it.ID, it.Status)
		}
		if it.Outside {
			return a.failf("%s is outside the network boundary: it cannot be approved, only denied (signoff net deny %s --reason …)", netpolicy.JoinHostPort(dest.Host, dest.Port), it.ID)
		}
	}

	// What the approval will do, checked before anything is sent.
	var copyText *string
	next, ch := netpolicy.Derive(cur.Policy, dest)
	if *from != "" {
		data, err := os.ReadFile(*from)
		if err != nil {
			return a.failf("cannot read %s: %v", *from, err)
		}
		pol, err := netpolicy.CheckCopy(*from, data, cur.Policy, dest, nil)
		if err != nil {
			fmt.Fprintf(a.stderr, "check of %s failed; nothing was sent and the request keeps waiting:\n%s\n", *from, err)
			return 1
		}
		s := string(data)
		copyText, next, ch = &s, pol, netpolicy.Change{Kind: netpolicy.Replaced}
		fmt.Fprintf(a.stdout, "check of %s: ok (valid, lets the request through)\n", *from)
	}
	if ch.Kind == netpolicy.AlreadyAllowed {
		fmt.Fprintf(a.stdout, "revision %d already allows it (%s): approving changes no door\n", cur.N, ch.Entry)
	} else {
		fmt.Fprintf(a.stdout, "revision %d would be revision %d:\n", cur.N, cur.N+1)
		for _, line := range netpolicy.Diff(cur.Policy, next) {
			fmt.Fprintf(a.stdout, "  %s\n", line)
		}
		if dest.Method == "" {
			fmt.Fprintf(a.stdout, "  (no method or path was asked: every method on %s)\n", netpolicy.JoinHostPort(dest.Host, dest.Port))
		}
	}
	var fileOut []byte
	if *save {
		data, err := os.ReadFile(cfg.NetPolicy)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return a.failf("cannot read the policy file %s: %v", cfg.NetPolicy, err)
		}
		if copyText != nil {
			fileOut = []byte(*copyText)
		} else if fileOut, _, err = netpolicy.EditFile(cfg.NetPolicy, data, dest, nil); err != nil {
			fmt.Fprintf(a.stderr, "check of the edited %s failed; nothing was sent or written and the request keeps waiting:\n%s\n", cfg.NetPolicy, err)
			return 1
		}
		fmt.Fprintf(a.stdout, "%s would change:\n", cfg.NetPolicy)
		for _, line := range netpolicy.LineDiff(string(data), string(fileOut)) {
			fmt.Fprintf(a.stdout, "  %s\n", line)
		}
		fmt.Fprintf(a.stdout, "check of the edited file: ok (valid, lets the request through, comments kept)\n")
	}
	if *dry {
		fmt.Fprintln(a.stdout, "dry run: nothing was approved or written")
		return 0
	}

	signer, code := sf.open(a, cfg, "net approve")
	if signer == nil {
		return code
	}
	if draft != nil { // a draft is filed first: nobody has been asked yet
		ans, err := c.NetApprove(ctx, draft.ID, httpapi.NetAnswerBody{})
		if err != nil {
			return a.fail(err)
		}
		if ans.Request == nil {
			fmt.Fprintln(a.stdout, printable(ans.Message))
			return 0
		}
		fmt.Fprintf(a.stdout, "filed draft %s as request %s\n", draft.ID, ans.Request.ID)
		it = &netpolicy.Item{Record: netpolicy.Record{ID: ans.Request.ID, Dest: dest}}
	}
	ev, npub, code := signNetAnswer(ctx, a, cfg, c, it.ID, signer, bot.Approve)
	if ev == nil {
		return code
	}
	body := httpapi.NetAnswerBody{Event: ev, Policy: copyText}
	if copyText != nil {
		body.PolicyName = *from
	}
	ans, err := c.NetApprove(ctx, it.ID, body)
	if err != nil {
		return a.fail(err)
	}
	fmt.Fprintf(a.stdout, "approve as %s: %s\n", npub, printable(ans.Message))
	if ap := ans.Applied; ap != nil {
		for _, line := range ap.Diff {
			fmt.Fprintf(a.stdout, "  %s\n", line)
		}
		if ap.Note != "" {
			fmt.Fprintf(a.stdout, "  note: %s\n", ap.Note)
		}
	}
	if ans.Vote.Result != bot.Counted {
		return 1
	}
	if *save && ans.Applied != nil {
		if err := netpolicy.WriteFileAtomic(cfg.NetPolicy, fileOut); err != nil {
			return a.failf("approved, but writing %s failed: %v", cfg.NetPolicy, err)
		}
		fmt.Fprintf(a.stdout, "wrote %s\n", cfg.NetPolicy)
	} else if *save {
		fmt.Fprintf(a.stdout, "not decided yet: %s is left as it is\n", cfg.NetPolicy)
	}
	return 0
}

// findNetRequest finds the network request or draft whose id starts with
// prefix, among all the gateway lists, for approve and deny.
func findNetRequest(ctx context.Context, stderr io.Writer, prefix string) (*config, *httpapi.Client, *netpolicy.Item, *netpolicy.Draft, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	c := cfg.client(stderr)
	l, err := c.NetRequests(ctx, true)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	it, draft, err := l.Find(prefix)
	return cfg, c, it, draft, err
}

func netDeny(ctx context.Context, a *app, args []string) int {
	fs := a.flags("net deny", "net deny ID --reason R [--key FILE | --bunker bunker://…]")
	reason := fs.String("reason", "", "why (the agent is told, so it can ask for something narrower)")
	sf := addSignerFlags(fs)
	if code, ok := parse(fs, reorder(args)); !ok {
		return code
	}
	if fs.NArg() != 1 || strings.TrimSpace(*reason) == "" {
		fs.Usage()
		return a.failf("net deny takes one id and --reason")
	}
	cfg, c, it, draft, err := findNetRequest(ctx, a.stderr, fs.Arg(0))
	if err != nil {
		return a.fail(err)
	}
	if draft != nil {
		return a.failf("%s is a draft: nobody was asked, so there is nothing to deny", draft.ID)
	}
	signer, code := sf.open(a, cfg, "net deny")
	if signer == nil {
		return code
	}
	ev, npub, code := signNetAnswer(ctx, a, cfg, c, it.ID, signer, bot.Deny)
	if ev == nil {
		return code
	}
	ans, err := c.NetDeny(ctx, it.ID, httpapi.NetAnswerBody{Event: ev, Reason: *reason})
	if err != nil {
		return a.fail(err)
	}
	fmt.Fprintf(a.stdout, "deny as %s: %s\n", npub, printable(ans.Message))
	if ans.Vote.Result != bot.Counted {
		return 1
	}
	return 0
}

func netPolicy(ctx context.Context, a *app, args []string) int {
	fs := a.flags("net policy", "net policy [--rev N] [--diff N] [--json]")
	rev := fs.Int("rev", 0, "show revision N (default: the current one)")
	diff := fs.Int("diff", 0, "show what revision N changed")
	asJSON := fs.Bool("json", false, "print JSON")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *rev < 0 || *diff < 0 || *rev > 0 && *diff > 0 {
		return a.failf("give --rev N or --diff N (N from 1)")
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	n := max(*rev, *diff)
	r, err := cfg.client(a.stderr).Policy(ctx, n)
	if err != nil {
		return a.fail(err)
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(r)
		return 0
	}
	by := strings.Join(r.By, ", ")
	if by == "" {
		by = "nobody"
	}
	fmt.Fprintf(a.stdout, "revision %d — %s — by %s at %s\n", r.N, printable(r.Why), by, r.At.UTC().Format(time.RFC3339))
	if *diff > 0 {
		if len(r.Diff) == 0 {
			fmt.Fprintln(a.stdout, "  (no change)")
		}
		for _, line := range r.Diff {
			fmt.Fprintf(a.stdout, "  %s\n", line)
		}
		return 0
	}
	if len(r.Policy.Hosts) == 0 {
		fmt.Fprintln(a.stdout, "  no doors: nothing is let through")
	}
	for _, e := range r.Policy.Hosts {
		fmt.Fprintf(a.stdout, "  %s\n", e.String())
	}
	return 0
}

// reorder puts flags before the id, so `net approve ID --save` works as
// `net approve --save ID` (the flag package stops at the first argument).
func reorder(args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		s := args[i]
		if strings.HasPrefix(s, "-") && len(s) > 1 {
			flags = append(flags, s)
			name := strings.TrimLeft(s, "-")
			if !strings.Contains(name, "=") && takesValue(name) && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		rest = append(rest, s)
	}
	return append(flags, rest...)
}

func takesValue(flag string) bool {
	switch flag {
	case "policy-from", "key", "reason":
		return true
	}
	return false
}

// printable shows agent-written text in a terminal as text: control
// characters, escape sequences, bidi overrides and anything not graphic are
// written as visible escapes (the shared bot.EscapeLines; a tab shows as \t).
func printable(s string) string { return bot.EscapeLines(s) }
