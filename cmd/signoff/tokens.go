package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/tokens"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

func init() { commands["tokens"] = tokensCmd }

const tokensUsage = `usage:
  signoff tokens [--json]                       list tokens (name, scopes, personas, created, last used, expires)
  signoff tokens create --name N --scopes S,… [--personas P,…] [--expires 30d] [--json]
                                                make a token; it is printed once, alone on the last line
  signoff tokens revoke NAME                    end a token at once, on every replica
scopes: ` + "request, check, read:requests, classify, net:request, publish, admin"

func tokensCmd(ctx context.Context, a *app, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "create":
			return tokensCreate(ctx, a, args[1:])
		case "revoke":
			return tokensRevoke(ctx, a, args[1:])
		case "list":
			args = args[1:]
		case "-h", "--help", "help":
			fmt.Fprintln(a.stdout, tokensUsage)
			return 0
		default:
			if !strings.HasPrefix(args[0], "-") {
				return a.failf("unknown tokens command %q\n%s", args[0], tokensUsage)
			}
		}
	}
	fs := a.flags("tokens", "tokens [--json]")
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
	printTokens(a, ts, *asJSON, false)
	return 0
}

func printTokens(a *app, ts []*tokens.Token, asJSON, ext bool) {
	if asJSON {
		if ts == nil {
			ts = []*tokens.Token{}
		}
		json.NewEncoder(a.stdout).Encode(map[string]any{"tokens": ts})
		return
	}
	if len(ts) == 0 {
		fmt.Fprintln(a.stderr, "no tokens (signoff tokens create --name me --scopes admin)")
		return
	}
	now := time.Now()
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	if ext {
		fmt.Fprintln(tw, "EXTENSION\tSCOPES\tNETWORK\tPERSONAS\tCREATED\tLAST USED\tEXPIRES")
	} else {
		fmt.Fprintln(tw, "NAME\tSCOPES\tPERSONAS\tCREATED\tLAST USED\tEXPIRES")
	}
	for _, t := range ts {
		personas := strings.Join(t.Personas, ",")
		if personas == "" {
			personas = "any"
		}
		used := "never"
		if !t.LastUsed.IsZero() {
			used = t.LastUsed.Local().Format("2006-01-02 15:04")
		}
		exp := "never"
		if !t.Expires.IsZero() {
			exp = t.Expires.Local().Format("2006-01-02 15:04")
			if t.Expired(now) {
				exp += " (expired)"
			}
		}
		created := t.Created.Local().Format("2006-01-02 15:04")
		if ext {
			net := strings.Join(t.Network, ",")
			if net == "" {
				net = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, tokens.Join(t.Scopes), net, personas, created, used, exp)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, tokens.Join(t.Scopes), personas, created, used, exp)
		}
	}
	tw.Flush()
}

func tokensCreate(ctx context.Context, a *app, args []string) int {
	fs := a.flags("tokens create", "tokens create --name N --scopes S,… [--personas P,…] [--expires 30d] [--json]")
	name := fs.String("name", "", "the token's name (a-z, 0-9, '.', '_', '-')")
	scopes := fs.String("scopes", "", "comma-separated: request, check, read:requests, classify, net:request, publish, admin")
	personas := fs.String("personas", "", "comma-separated personas it may act for (default: any)")
	expires := fs.String("expires", "", "expiry such as 30d, 12h (default: never)")
	asJSON := fs.Bool("json", false, `print {"name":…,"token":…}`)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.failf("tokens create takes flags only (got %q)", fs.Arg(0))
	}
	if *name == "" || *scopes == "" {
		return a.failf("tokens create needs --name and --scopes (e.g. --name ci-agent --scopes request,check)")
	}
	n := httpapi.NewToken{Name: *name, Scopes: splitList(*scopes), Personas: splitList(*personas), Expires: *expires}
	if _, err := n.Spec(); err != nil { // say what is wrong before reaching anything
		return a.fail(err)
	}
	return createAndPrint(ctx, a, n, *asJSON)
}

// createAndPrint makes the token and prints it once, alone on the last
// line of stdout (what a script captures); the rest goes to stderr.
func createAndPrint(ctx context.Context, a *app, n httpapi.NewToken, asJSON bool) int {
	adm, done, err := tokenAdmin(ctx, a)
	if err != nil {
		return a.fail(err)
	}
	defer done()
	out, err := adm.CreateToken(ctx, n)
	if err != nil {
		return a.fail(err)
	}
	for _, w := range out.Warnings {
		fmt.Fprintf(a.stderr, "⚠ %s\n", w)
	}
	if asJSON {
		json.NewEncoder(a.stdout).Encode(map[string]string{"name": out.Name, "token": out.Token})
		return 0
	}
	t := out.Record
	desc := "scopes " + tokens.Join(t.Scopes)
	if len(t.Personas) > 0 {
		desc += "; only for persona " + strings.Join(t.Personas, ", ")
	}
	if !t.Expires.IsZero() {
		desc += "; expires " + t.Expires.Local().Format(time.RFC3339)
	}
	fmt.Fprintf(a.stderr, "token %q created (%s).\nIt is shown this once and only its hash is kept: give it to its holder as SIGNOFF_TOKEN, or in a file of mode 0600 named by SIGNOFF_TOKEN_FILE.\n", t.Name, desc)
	fmt.Fprintln(a.stdout, out.Token)
	return 0
}

func tokensRevoke(ctx context.Context, a *app, args []string) int {
	fs := a.flags("tokens revoke", "tokens revoke NAME")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return a.failf("usage: signoff tokens revoke NAME")
	}
	adm, done, err := tokenAdmin(ctx, a)
	if err != nil {
		return a.fail(err)
	}
	defer done()
	if err := adm.RevokeToken(ctx, fs.Arg(0)); err != nil {
		return a.fail(err)
	}
	fmt.Fprintf(a.stderr, "token %q revoked: every replica refuses it from now on\n", fs.Arg(0))
	return 0
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// admin is where token commands go: the gateway's API, or the tokens
// service on the store itself when SIGNOFF_REDIS_URL names it. Either way
// the person proves it with their key (NIP-98), or sends an admin token.
type admin interface {
	CreateToken(ctx context.Context, n httpapi.NewToken) (httpapi.CreatedToken, error)
	Tokens(ctx context.Context) ([]*tokens.Token, error)
	RevokeToken(ctx context.Context, name string) error
}

func tokenAdmin(ctx context.Context, a *app) (admin, func(), error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, nil, err
	}
	sign, err := personAuth(a, cfg)
	if err != nil {
		return nil, nil, err
	}
	if cfg.RedisURL == "" {
		cl := cfg.client(a.stderr)
		cl.Person = sign
		return cl, func() {}, nil
	}
	rdb, err := qredis.Open(cfg.RedisURL)
	if err != nil {
		return nil, nil, err
	}
	store := qredis.New(rdb, "signoff")
	k, err := tokenSecret(ctx, cfg, store)
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	svc := &tokens.Service{Store: store, Secret: k, Owners: storeOwners{store, cfg},
		Audit: &signing.ChainAppender{Store: store}, ClosedMark: filepath.Join(cfg.DataDir, "tokens.closed"),
		Logger: slog.New(slog.DiscardHandler)}
	by, err := storeCaller(ctx, svc, store, k, cfg, sign)
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return &storeAdmin{svc: svc, store: store, by: by}, func() { rdb.Close() }, nil
}

// storeCallURL is the URL a person's signature names for a command on the
// store (there is no gateway URL): the proof is checked here, at once.
const storeCallURL = "http://store.signoff.invalid/v1/tokens"

// storeCaller is who runs a command on the store: the person, signing a
// NIP-98 event checked as the gateway would, or an admin token.
func storeCaller(ctx context.Context, svc *tokens.Service, store *qredis.Store, k tokens.Secret, cfg *config, sign func(context.Context, tokens.Call) (string, error)) (tokens.Caller, error) {
	if sign == nil {
		if cfg.Token == "" {
			return tokens.Caller{}, fmt.Errorf("tokens on the store are managed by a person: sign with your key (SIGNOFF_KEY, or the key `signoff init` wrote; SIGNOFF_BUNKER for your signer), or send an admin token (SIGNOFF_TOKEN)")
		}
		t, err := tokens.Authenticate(ctx, store, k, "Bearer "+string(cfg.Token), time.Now())
		if err != nil {
			return tokens.Caller{}, err
		}
		return tokens.Caller{Token: t}, nil
	}
	call := tokens.Call{Method: "POST", URL: storeCallURL}
	h, err := sign(ctx, call)
	if err != nil {
		return tokens.Caller{}, err
	}
	proof, err := tokens.ParseHTTPAuth(h, call, time.Now())
	if err != nil {
		return tokens.Caller{}, err
	}
	return svc.Person(ctx, proof)
}

// storeOwners are the owners of the personas the gateways loaded into the
// store, or, before any gateway ran on it, of those in this machine's
// persona folder (SIGNOFF_PERSONAS), as serve would load them.
type storeOwners struct {
	store *qredis.Store
	cfg   *config
}

func (o storeOwners) OwnerOf(ctx context.Context, pubkey string) (string, bool, error) {
	if name, ok, err := o.store.OwnerOf(ctx, pubkey); err != nil || ok {
		return name, ok, err
	}
	ps, err := loadPersonas(o.cfg.Personas, slog.New(slog.DiscardHandler))
	if err != nil {
		return "", false, nil
	}
	return tokens.OwnersOf(ps).OwnerOf(ctx, pubkey)
}

// storeAdmin manages tokens through the tokens service on the store.
type storeAdmin struct {
	svc   *tokens.Service
	store *qredis.Store
	by    tokens.Caller
}

func (s *storeAdmin) CreateToken(ctx context.Context, n httpapi.NewToken) (httpapi.CreatedToken, error) {
	spec, err := n.Spec()
	if err != nil {
		return httpapi.CreatedToken{}, err
	}
	plain, t, err := s.svc.Create(ctx, s.by, spec)
	if err != nil {
		return httpapi.CreatedToken{}, err
	}
	return httpapi.CreatedToken{Name: t.Name, Token: plain, Record: t, Warnings: httpapi.PersonaWarnings(ctx, s.store, t.Personas)}, nil
}

func (s *storeAdmin) Tokens(ctx context.Context) ([]*tokens.Token, error) {
	return s.svc.List(ctx, s.by)
}

func (s *storeAdmin) RevokeToken(ctx context.Context, name string) error {
	_, err := s.svc.Revoke(ctx, s.by, name)
	return err
}

// personAuth is how token commands sign as the person (NIP-98): on their
// signer (SIGNOFF_BUNKER), else with their key file (SIGNOFF_KEY or the
// one `signoff init` wrote). nil when neither is there: the command sends
// SIGNOFF_TOKEN instead.
func personAuth(a *app, cfg *config) (func(context.Context, tokens.Call) (string, error), error) {
	bunkerURL, err := bunkerFromEnv()
	if err != nil {
		return nil, err
	}
	if bunkerURL != "" {
		b, err := signing.ParseBunkerURL(bunkerURL)
		if err != nil {
			return nil, fmt.Errorf("SIGNOFF_BUNKER: %v", err)
		}
		return func(ctx context.Context, call tokens.Call) (string, error) {
			raw, err := bunkerSign(ctx, a, b, tokens.HTTPAuthEvent(call, time.Now()))
			if err != nil {
				return "", err
			}
			return tokens.HTTPAuthHeader(raw), nil
		}, nil
	}
	path := cfg.keyPath()
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read your key at %s: %v", path, err)
	}
	key, err := signing.ParseKey(string(raw))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %v", path, err)
	}
	return func(_ context.Context, call tokens.Call) (string, error) {
		ev := tokens.HTTPAuthEvent(call, time.Now())
		if err := key.Sign(&ev); err != nil {
			return "", err
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return "", err
		}
		return tokens.HTTPAuthHeader(b), nil
	}, nil
}

// tokenSecret is SIGNOFF_TOKEN_SECRET, or the one kept in the data dir
// (made on first use), checked against the fingerprint the store keeps so
// that replicas with different secrets are caught at start.
func tokenSecret(ctx context.Context, cfg *config, store *qredis.Store) (tokens.Secret, error) {
	var k tokens.Secret
	path := filepath.Join(cfg.DataDir, "token.secret")
	if cfg.TokenSecret != "" {
		var err error
		if k, err = tokens.ParseSecret(string(cfg.TokenSecret)); err != nil {
			return nil, fmt.Errorf("SIGNOFF_TOKEN_SECRET: %w", err)
		}
		path = "SIGNOFF_TOKEN_SECRET"
	} else {
		stored, err := store.TokenSecretFingerprint(ctx, "")
		if err != nil {
			return nil, err
		}
		if _, statErr := os.Stat(path); errors.Is(statErr, os.ErrNotExist) && stored != "" {
			return nil, fmt.Errorf("the store's tokens were made with a token secret this machine does not have (%s is missing): set SIGNOFF_TOKEN_SECRET to the gateway's, or copy its token.secret", path)
		}
		if k, _, err = tokens.LoadOrCreateSecret(path); err != nil {
			return nil, err
		}
	}
	stored, err := store.TokenSecretFingerprint(ctx, k.Fingerprint())
	if err != nil {
		return nil, err
	}
	if stored != k.Fingerprint() {
		return nil, fmt.Errorf("the token secret (%s) is not the one the store's tokens were made with: every replica and `tokens create` on the store need the same SIGNOFF_TOKEN_SECRET", path)
	}
	return k, nil
}

// onOff is a yes/no setting; empty is no (an empty variable in a compose
// file should not stop the gateway with a parse error).
type onOff bool

// Decode implements envconfig.Decoder.
func (o *onOff) Decode(v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no", "off":
		*o = false
	case "1", "true", "yes", "on":
		*o = true
	default:
		return fmt.Errorf("%q is not true or false", v)
	}
	return nil
}

// resolveToken fills Token from SIGNOFF_TOKEN_FILE, or the default token
// file when it exists, unless SIGNOFF_TOKEN is set.
func (c *config) resolveToken() error {
	if c.Token != "" {
		return nil
	}
	path := c.TokenFile
	if path == "" {
		d, err := os.UserConfigDir()
		if err != nil {
			return nil
		}
		path = filepath.Join(d, "signoff", "token")
		if _, err := os.Stat(path); err != nil {
			return nil
		}
	}
	tok, err := tokens.ReadTokenFile(path)
	if err != nil {
		return err
	}
	c.Token = secret(tok)
	return nil
}

// client reaches the gateway at SIGNOFF_URL with the configured token.
// Its calls the gateway rate-limits are tried again after the wait it
// asks for, each wait told on stderr (nil: not told).
func (c *config) client(stderr io.Writer) *httpapi.Client {
	cl := httpapi.NewClient(c.URL)
	cl.Token = string(c.Token)
	if stderr != nil {
		cl.OnRetry = func(wait time.Duration, msg string) {
			fmt.Fprintf(stderr, "signoff: the gateway is rate limiting this client (%s); trying again in %s\n", msg, wait)
		}
	}
	return cl
}

// serveAuth is serve's token set-up and its start-up rules: on loopback
// with no token the API stays open (to calls that make no token) and says
// so; any other listen address needs SIGNOFF_REQUIRE_TOKENS=true or an
// admin token, or serve refuses. Tokens are made by a persona owner's
// signed call, or with an admin token.
func serveAuth(ctx context.Context, cfg *config, store *qredis.Store, audit *signing.AuditLog, personas []bot.Persona, log *slog.Logger) (*httpapi.Auth, error) {
	k, err := tokenSecret(ctx, cfg, store)
	if err != nil {
		return nil, err
	}
	ts, err := store.Tokens(ctx)
	if err != nil {
		return nil, err
	}
	admins := 0
	for _, t := range ts {
		if t.Has(tokens.Admin) && !t.Expired(time.Now()) {
			admins++
		}
	}
	local := loopbackAddr(cfg.Listen)
	if !local && !bool(cfg.RequireTokens) && admins == 0 {
		return nil, fmt.Errorf("SIGNOFF_LISTEN=%s is reachable from other machines and no admin token exists, so the API would be open to them.\n"+
			"Set SIGNOFF_REQUIRE_TOKENS=true, and once serve runs make the first token with your key (you must own a persona it loads):\n"+
			"  signoff tokens create --name admin --scopes admin", cfg.Listen)
	}
	au := &httpapi.Auth{Tokens: store, Secret: k, Require: bool(cfg.RequireTokens) || !local, Audit: audit,
		Owners: tokens.OwnersOf(personas), ClosedMark: filepath.Join(cfg.DataDir, "tokens.closed"),
		Logger: log}
	if audit != nil {
		au.History = func() bool { return audit.Holds(tokens.TypeToken) }
	}
	svc := au.Service()
	closed, err := svc.Closed(ctx)
	if err != nil {
		return nil, err
	}
	svc.Ready(ctx) // logs TOKENS LOST when the store lost them
	switch {
	case svc.Lost() != "":
	case len(ts) > 0:
		log.Info("tokens required", "tokens", len(ts), "admin tokens", admins)
	case closed:
	case !au.Require:
		log.Warn("API open: no token exists, so calls from this machine need none (loopback only; none of them can make a token). Close it with a token made with your key: signoff tokens create --name me --scopes admin")
	default:
		log.Warn("tokens required and none exists yet: make the first with your key (as a persona's owner): signoff tokens create --name admin --scopes admin")
	}
	return au, nil
}

// loopbackAddr reports whether a listen address is reachable only from
// this machine.
func loopbackAddr(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// bunkerSign has the person's remote signer sign ev (a NIP-98 event):
// within the window the gateway accepts it in.
func bunkerSign(ctx context.Context, a *app, b *signing.BunkerURL, ev gonostr.Event) (json.RawMessage, error) {
	path := bunkerClientKeyPath()
	clientKey, made, err := signing.LoadOrCreateKey(path)
	if err != nil {
		return nil, fmt.Errorf("session key for your signer: %w", err)
	}
	if made {
		fmt.Fprintf(a.stderr, "made %s: the key signoff talks to signers with (it signs no votes)\n", path)
	}
	deadline := time.Now().Add(tokens.HTTPAuthWindow - 5*time.Second)
	fmt.Fprintf(a.stderr, "reaching your signer %s to sign this call\n", b.Redacted())
	s, err := openBunker(ctx, a.stderr, b, clientKey, deadline)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Sign(ctx, ev, deadline)
}
