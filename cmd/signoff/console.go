package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/console"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/tokens"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

func init() { commands["console"] = consoleCmd }

// serveConsole is serve's console: the live feed, the audit view and the
// policy file "approve and save" edits.
func serveConsole(cfg *config, key *signing.Key, store *qredis.Store, feed *console.Feed) *httpapi.Console {
	audit := &console.AuditFile{Path: cfg.AuditPath, Signer: key.PublicKey()}
	if cfg.RedisURL != "" {
		audit.StoreHead = store.AuditHead
	}
	electorate := func(ctx context.Context, r *bot.Request) {
		if p, err := store.Snapshot(ctx, r.ID); err == nil {
			r.Electorate = bot.ElectorateOf(p, r.Votes)
		}
	}
	return &httpapi.Console{Feed: feed, GatewayKey: key.PublicKey(), Audit: audit, PolicyFile: cfg.NetPolicy, Electorate: electorate}
}

// consoleCmd prints the console's link — the gateway's key pinned and a
// read:requests token in its fragment, which no browser sends to any
// server — and opens it where there is a desktop.
func consoleCmd(ctx context.Context, a *app, args []string) int {
	fs := a.flags("console", "console [--admin] [--expires D] [--no-open]")
	admin := fs.Bool("admin", false, "also carry your admin token (SIGNOFF_TOKEN) in the link: network approvals, grants and tokens")
	expires := fs.String("expires", "12h", "how long the read:requests token made for the link lasts")
	noOpen := fs.Bool("no-open", false, "print the link only")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return a.failf("console takes no arguments")
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	pin, err := cfg.pin()
	if err != nil {
		return a.failf("cannot pin the gateway key for the console: %v", err)
	}
	if cfg.Token == "" {
		return a.failf("the console needs a token with read:requests; make one with\n" +
			"  signoff tokens create --name console --scopes read:requests\n" +
			"then run SIGNOFF_TOKEN=<it> signoff console (an admin token makes one for you)")
	}
	c := cfg.client(a.stderr)
	self, err := c.SelfToken(ctx)
	if err != nil {
		return a.fail(err)
	}
	read := string(cfg.Token)
	switch {
	case self.Has(tokens.Admin):
		made, err := c.CreateToken(ctx, httpapi.NewToken{
			Name:    "console-" + time.Now().UTC().Format("20060102-150405"),
			Scopes:  []string{string(tokens.ReadRequests)},
			Expires: *expires,
		})
		if err != nil {
			return a.fail(err)
		}
		read = made.Token
		fmt.Fprintf(a.stderr, "made token %s (read:requests, expires in %s) for the link; `signoff tokens revoke %s` ends it\n", made.Name, *expires, made.Name)
	case !self.Has(tokens.ReadRequests):
		return a.failf("token %s has no read:requests scope (it has %s): the console cannot read with it", self.Name, tokens.Join(self.Scopes))
	}
	frag := url.Values{"token": {read}, "pin": {pin.Key}}
	if *admin {
		if !self.Has(tokens.Admin) {
			return a.failf("--admin: token %s has no admin scope", self.Name)
		}
		frag.Set("admin", string(cfg.Token))
	}
	link := cfg.URL + console.Prefix + "#" + frag.Encode()
	fmt.Fprintln(a.stdout, link)
	fmt.Fprintln(a.stderr, "the link carries a token: open it yourself, do not paste it where others read")
	if *noOpen || (os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "") {
		return 0
	}
	if xdg, err := exec.LookPath("xdg-open"); err == nil {
		cmd := exec.Command(xdg, link)
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(a.stderr, "could not open a browser (%v); open the link above\n", err)
			return 0
		}
		go cmd.Wait()
	}
	return 0
}
