package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/console"
	"github.com/signoff/signoff/bot/grants"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/notify"
	"github.com/signoff/signoff/bot/permissions"
	"github.com/signoff/signoff/bot/readiness"
	"github.com/signoff/signoff/configs"
	"github.com/signoff/signoff/quorum"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

func init() { commands["serve"] = serve }

// runner is a platform connection that runs until its context ends.
type runner interface {
	Run(ctx context.Context) error
}

func serve(ctx context.Context, a *app, args []string) int {
	fs := a.flags("serve", "serve")
	fs.Usage = func() {
		fmt.Fprint(a.stderr, "usage: signoff serve   (run the gateway; no flags: it is configured by these variables)\n\n")
		var c config
		tw := tabwriter.NewWriter(a.stderr, 0, 4, 2, ' ', 0)
		envconfig.Usagef("signoff", &c, tw, serveUsageFormat)
		tw.Flush()
		fmt.Fprint(a.stderr, "\nLogs: SIGNOFF_LOG_FORMAT=json for JSON lines. New requests are logged with the commands that answer them.\n")
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.failf("serve takes no arguments (configuration comes from SIGNOFF_* variables)")
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	return serveWith(ctx, a, cfg)
}

// serveWith runs the gateway configured by cfg (bench spawns one so).
func serveWith(ctx context.Context, a *app, cfg *config) int {
	log, err := cfg.logger(a.stderr)
	if err != nil {
		return a.fail(err)
	}
	if os.Getenv("GOGC") == "" { // else the runtime applied the operator's
		debug.SetGCPercent(serveGCPercent)
		log.Info("go runtime: GOGC=400 (a vote allocates little that lives; set GOGC, and GOMEMLIMIT under a container's limit, to choose)")
	}

	// The store: embedded unless a real Redis is named.
	var store *qredis.Store
	if cfg.RedisURL == "" {
		rdb, stop, err := qredis.Embedded()
		if err != nil {
			return a.fail(err)
		}
		defer stop()
		store = qredis.New(rdb, "signoff")
		log.Info("store: embedded in-memory Redis; nothing is kept after exit (set SIGNOFF_REDIS_URL for a real one)")
	} else {
		rdb, err := qredis.Open(cfg.RedisURL)
		if err != nil {
			return a.fail(err)
		}
		defer rdb.Close()
		store = qredis.New(rdb, "signoff")
		log.Info("store: redis", "url", redactURL(cfg.RedisURL))
		warnOpenRedis(cfg.RedisURL, log)
	}
	if cfg.TestCrashAfterDecide {
		log.Warn("SIGNOFF_TEST_CRASH_AFTER_DECIDE is set: this gateway kills itself right after its first decision (a fault test)")
		store.AfterDecide = func(id string) {
			log.Warn("SIGNOFF_TEST_CRASH_AFTER_DECIDE: killed right after deciding", "id", id)
			crashNow()
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = store.Ping(pctx)
	cancel()
	if err != nil {
		return a.fail(err)
	}

	personas, err := loadPersonas(cfg.Personas, log)
	if err != nil {
		return a.fail(err)
	}
	// The keeper loads the personas and, should Redis come back empty,
	// fails /readyz and loads them again.
	host, _ := os.Hostname()
	keeper := &readiness.Keeper{Store: store, Personas: personas, Every: cfg.StoreCheck, Logger: log, ID: host + " " + cfg.Listen}
	removed, err := keeper.Load(ctx)
	if err != nil {
		return a.fail(err)
	}
	if len(removed) > 0 {
		log.Warn("personas removed from the store: their files are gone", "names", removed)
	}

	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return a.fail(err)
	}
	defer unlock()
	key, err := gatewayKey(cfg, log)
	if err != nil {
		return a.fail(err)
	}
	// One key for the fleet: checked now, and again whenever the keeper
	// reloads an emptied store.
	keeper.Claim = func(ctx context.Context) error { return claimFleetKey(ctx, store, key, cfg) }
	if err := keeper.Claim(ctx); err != nil {
		return a.fail(err)
	}
	if err := writeLocalPin(cfg, key, log); err != nil {
		return a.fail(err)
	}
	witnesses := auditWitnesses(cfg, store, key, personas, log)
	audit, err := openAudit(ctx, a, cfg, key, store, witnesses, log)
	if err != nil {
		return a.fail(err)
	}
	defer func() {
		audit.Close()
		// The last checkpoint (signed at close) reaches the witnesses too.
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		witnesses.Flush(fctx)
		cancel()
	}()
	keeper.Also = append(keeper.Also, witnesses.Ready)
	auth, err := serveAuth(ctx, cfg, store, audit, personas, log)
	if err != nil {
		return a.fail(err)
	}
	keeper.Also = append(keeper.Also, auth.Service().Ready)

	classifier, err := loadClassifier(cfg.Rules)
	if err != nil {
		return a.fail(err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerPending(reg, store)
	registerBuildInfo(reg)
	metrics := bot.NewMetrics(reg)
	g := &bot.Gateway{
		Store:      store,
		Signer:     key,
		Classifier: classifier,
		Audit:      audit,
		Outbox:     store,
		Channels:   map[bot.Platform]bot.Channel{},
		Metrics:    metrics,
		Logger:     log,
	}
	g.Grants = &grants.Maker{Store: store, Audit: audit}
	notifier := &notify.Runner{Logger: log}
	defer notifier.Close()
	// The notify commands come from the files this process read, never
	// from the store (which anyone who reaches Redis could write).
	notifyOf := map[string]bot.Persona{}
	for _, p := range personas {
		notifyOf[p.Name] = p
	}
	g.Created = func(r bot.Request, _ bot.Persona) {
		logNewRequest(log, &r)
		notifier.Notify(&r, notifyOf[r.Persona])
	}
	registerWaiters(reg, g)
	plat, err := platforms(cfg, g, personas, key, log)
	if err != nil {
		return a.fail(err)
	}
	posts := map[bot.Platform]bool{}
	for p := range g.Channels {
		posts[p] = true
	}
	warnings, fatal := reachProblems(personas, posts)
	for _, w := range warnings {
		log.Warn("CHANNEL UNREACHABLE: " + w)
	}
	if len(fatal) > 0 {
		return a.failf("%s\n(set the platform's credentials, or fix the persona; `signoff personas check` says the same)", strings.Join(fatal, "\n"))
	}
	if err := g.Start(ctx); err != nil {
		return a.fail(err)
	}
	defer g.Close()

	var wg sync.WaitGroup
	rctx, stopRunners := context.WithCancel(ctx)
	defer func() { stopRunners(); wg.Wait() }()
	wg.Add(1)
	go func() { defer wg.Done(); keeper.Run(rctx) }()
	wg.Add(1)
	// Tokens seen close this replica for good; none while they existed
	// is TOKENS LOST (logged as it happens, /readyz fails).
	go func() { defer wg.Done(); auth.Service().Watch(rctx, cfg.StoreCheck) }()
	wg.Add(1)
	go func() { defer wg.Done(); witnesses.Run(rctx, time.Second) }()
	wg.Add(1)
	// While it follows the token channel, authentication answers from
	// what it read (quorum/redis, WatchTokens); while not, it reads Redis.
	go func() {
		defer wg.Done()
		bot.KeepFollowing(rctx, log, "token watch", func(ctx context.Context) error { return store.WatchTokens(ctx, nil) })
	}()
	for name, r := range plat.runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Run(rctx); err != nil && rctx.Err() == nil {
				log.Error("platform connection ended", "platform", name, "err", err)
			}
		}()
	}

	hosts, limit, err := apiGuards(cfg, log)
	if err != nil {
		return a.fail(err)
	}
	netSvc, err := startNetwork(ctx, cfg, g, store, audit, log)
	if err != nil {
		return a.fail(err)
	}
	defer netSvc.Close()
	feed := &console.Feed{Get: g.Get, Follow: console.FollowAll(store.WatchCreated, store.Watch), Logger: log}
	defer feed.Close()
	api := &httpapi.Server{
		Console:    serveConsole(cfg, key, store, feed),
		Network:    netSvc,
		Gateway:    g,
		Ready:      keeper.Ready,
		Metrics:    promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		Extra:      plat.handlers,
		Logger:     log,
		Auth:       auth,
		Classifier: classifier,
		Checker:    &permissions.Checker{Personas: store, Classifier: classifier, Grants: store, Audit: audit, Requests: g, Notary: key},

		OnCheck:      metrics.Checked,
		ObserveRoute: metrics.ObserveHTTP,

		AllowedHosts:  hosts,
		Limit:         limit,
		OnRateLimited: metrics.RateLimited,
	}
	if cfg.PprofListen != "" {
		stop, err := startPprof(cfg.PprofListen, log)
		if err != nil {
			return a.fail(err)
		}
		defer stop()
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return a.failf("cannot listen on %s (SIGNOFF_LISTEN): %v", cfg.Listen, err)
	}
	srv := &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      httpapi.MaxWait + 15*time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("signoff gateway listening", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String(), "bip340", signing.SchnorrLibrary())
	if a.ready != nil {
		a.ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	// httpapi.Listener: an answered long-poll's connection is served again
	// (the agent's next poll), not closed.
	go func() { errc <- srv.Serve(httpapi.NewListener(ln)) }()
	select {
	case err := <-errc:
		return a.failf("server stopped: %v", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	return 0
}

// serveUsageFormat is serve --help's table of variables.
const serveUsageFormat = `{{range .}}{{usage_key .}}{{"\t"}}{{usage_default .}}{{"\t"}}{{usage_description .}}
{{end}}`

// logNewRequest is serve's line for a request people may answer: what it
// is (the action escaped, on one line) and the commands that answer it.
func logNewRequest(log *slog.Logger, r *bot.Request) {
	m := notify.NewMessage(r)
	log.Info("NEW REQUEST waiting for an answer", "id", r.ID, "persona", r.Persona, "level", string(r.Level),
		"action", oneLine(bot.Escape(r.Action), 200), "approve", m.Approve, "deny", m.Deny, "show", m.Show)
}

// apiGuards reads SIGNOFF_ALLOWED_HOSTS, SIGNOFF_RATE_LIMIT and
// SIGNOFF_RATE_BURST, and says at start what they are; it warns when
// SIGNOFF_URL names a host the gateway would refuse.
func apiGuards(cfg *config, log *slog.Logger) ([]string, *httpapi.RateLimit, error) {
	hosts, err := httpapi.ParseHosts(cfg.AllowedHosts)
	if err != nil {
		return nil, nil, fmt.Errorf("SIGNOFF_ALLOWED_HOSTS: %w", err)
	}
	perSecond, burst := float64(httpapi.DefaultRate), httpapi.DefaultBurst
	if v := strings.TrimSpace(cfg.RateLimit); v != "" {
		if perSecond, err = strconv.ParseFloat(v, 64); err != nil {
			return nil, nil, fmt.Errorf("SIGNOFF_RATE_LIMIT %q is not a number of calls a second (0: no limit; default %d)", cfg.RateLimit, httpapi.DefaultRate)
		}
	}
	if v := strings.TrimSpace(cfg.RateBurst); v != "" {
		if burst, err = strconv.Atoi(v); err != nil {
			return nil, nil, fmt.Errorf("SIGNOFF_RATE_BURST %q is not a whole number of calls (default %d)", cfg.RateBurst, httpapi.DefaultBurst)
		}
	}
	limit, err := httpapi.NewRateLimit(perSecond, burst)
	if err != nil {
		return nil, nil, err
	}
	log.Info("api: Host must be localhost, an IP address or one of SIGNOFF_ALLOWED_HOSTS", "allowed_hosts", hosts)
	if limit == nil {
		log.Warn("api: no rate limit (SIGNOFF_RATE_LIMIT=0)")
	} else {
		log.Info("api: rate limit per client", "per_second", limit.Rate, "burst", limit.Burst)
	}
	if u, err := url.Parse(cfg.URL); err == nil && u.Host != "" && !(&httpapi.Server{AllowedHosts: hosts}).ServesHost(u.Host) {
		log.Warn("SIGNOFF_URL names a host this gateway refuses: add it to SIGNOFF_ALLOWED_HOSTS, or the CLI and `signoff healthcheck` here get 421", "url", cfg.URL, "host", u.Host)
	}
	return hosts, limit, nil
}

// loadPersonas reads the persona folder; when the default folder is not
// there (the binary runs away from the source tree) the embedded example
// is used. A file with errors stops the gateway: better not to start than
// to start with an electorate nobody wrote.
func loadPersonas(dir string, log *slog.Logger) ([]bot.Persona, error) {
	var (
		personas []bot.Persona
		problems quorum.Problems
		err      error
	)
	if dir == "configs/personas" && os.Getenv("SIGNOFF_PERSONAS") == "" {
		_, here := os.Stat(dir)
		if _, mine := os.Stat(userPersonasDir()); mine == nil {
			// `signoff init` was run: yours, even in a clone whose
			// configs/personas holds the example.
			if here == nil {
				log.Info("personas: using yours in " + userPersonasDir() + ", not configs/personas here (SIGNOFF_PERSONAS=configs/personas to use those)")
			}
			dir = userPersonasDir()
		} else if errors.Is(here, os.ErrNotExist) {
			dir = userPersonasDir() // where `signoff init` writes yours
		}
	}
	embedded := false
	if _, statErr := os.Stat(dir); errors.Is(statErr, os.ErrNotExist) && dir == userPersonasDir() {
		personas, problems, err = loadEmbeddedPersonas()
		embedded = true
		log.Info("personas: configs/personas not found here, nor " + dir + "; using the embedded example (run `signoff init` to make one you own)")
	} else {
		personas, problems, err = quorum.LoadDir(dir)
		log.Info("personas", "dir", dir)
	}
	if err != nil {
		return nil, err
	}
	for _, p := range problems {
		if p.Warning {
			log.Warn("persona file", "problem", p.String())
		}
	}
	if errs := problems.Errors(); len(errs) > 0 {
		return nil, fmt.Errorf("persona files have errors (fix them or run `signoff personas check %s`):\n%s", dir, errs.Error())
	}
	if len(personas) == 0 {
		log.Warn("no persona loaded: every request will be refused as unknown persona", "dir", dir)
	}
	for _, p := range personas {
		owner := ""
		if p.Owner != nil {
			owner = p.Owner.Name
		}
		var chans []string
		for _, c := range p.Channels {
			chans = append(chans, string(c.Platform))
		}
		log.Info("loaded persona", "name", p.Name, "owner", owner, "members", len(p.Members),
			"approvalQuorum", p.ApprovalQuorum, "denyQuorum", p.DenyQuorum, "proof", p.Proof, "timeout", p.Timeout, "channels", chans)
		if p.Owner == nil {
			log.Warn(noOwnerWarning(p.Name, embedded, dir))
		}
	}
	return personas, nil
}

// noOwnerWarning is serve's start-up line for a persona no one can approve
// (the embedded example is one): its requests are denied at once.
func noOwnerWarning(name string, embedded bool, dir string) string {
	where := "add an owner to its file in " + dir
	if embedded {
		where = "the embedded example has none on purpose"
	}
	return fmt.Sprintf("NO ONE CAN APPROVE: persona %s has no owner, so every request of it is denied at once (%s). "+
		"To approve, run `signoff init` (your key and a persona you own, in %s) and restart serve; see the README's walkthrough", name, where, userPersonasDir())
}

func loadEmbeddedPersonas() ([]bot.Persona, quorum.Problems, error) {
	entries, err := fs.Glob(configs.Personas, "personas/*.yaml")
	if err != nil {
		return nil, nil, err
	}
	var (
		out []bot.Persona
		ps  quorum.Problems
	)
	for _, name := range entries {
		data, err := configs.Personas.ReadFile(name)
		if err != nil {
			return nil, nil, err
		}
		p, problems := quorum.ParsePersona("embedded "+filepath.Base(name), data)
		ps = append(ps, problems...)
		if len(problems.Errors()) == 0 {
			out = append(out, p)
		}
	}
	return out, ps, nil
}

// gatewayKey is SIGNOFF_NOSTR_KEY, or the key kept in the data dir (made
// on first start).
func gatewayKey(cfg *config, log *slog.Logger) (*signing.Key, error) {
	if cfg.NostrKey != "" {
		k, err := signing.ParseKey(string(cfg.NostrKey))
		if err != nil {
			return nil, fmt.Errorf("SIGNOFF_NOSTR_KEY: %w", err)
		}
		log.Info("gateway key from SIGNOFF_NOSTR_KEY", "npub", k.Npub())
		return k, nil
	}
	path := filepath.Join(cfg.DataDir, "gateway.key")
	k, created, err := signing.LoadOrCreateKey(path)
	if err != nil {
		return nil, err
	}
	if created {
		log.Info("gateway key created", "path", path, "npub", k.Npub())
	} else {
		log.Info("gateway key", "path", path, "npub", k.Npub())
	}
	return k, nil
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

// crashNow ends the process as SIGKILL does: no deferred work, no
// shutdown (the fault tests' failpoint).
func crashNow() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Kill()
	}
	select {}
}

// claimFleetKey records this gateway's key as the fleet's in the store, or
// refuses when the replicas already there use another: a replica under
// another key would read every decision the others seal as denied.
func claimFleetKey(ctx context.Context, store *qredis.Store, key *signing.Key, cfg *config) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cur, err := store.ClaimGatewayKey(cctx, key.Npub())
	if err != nil {
		return err
	}
	if cur == key.Npub() {
		return nil
	}
	from := "from SIGNOFF_NOSTR_KEY"
	if cfg.NostrKey == "" {
		from = "from " + filepath.Join(cfg.DataDir, "gateway.key")
	}
	return fmt.Errorf("the gateways already on this Redis sign with the key %s, and this one's key is %s (%s).\n"+
		"Replicas sharing a Redis must share one gateway key, or each reads the others' decisions as denied: "+
		"give every replica the same SIGNOFF_NOSTR_KEY (or the same gateway.key file).\n"+
		"If the fleet's key was changed on purpose, stop the replicas under the old key and remove it: redis-cli DEL %s",
		cur, key.Npub(), from, store.FleetKeyName())
}

// serveGCPercent is the collector's target for a gateway whose operator
// did not choose one: a vote's garbage (its request, its JSON, its Redis
// replies) dies with it and the live heap is small (a waiter is under
// 2 KiB), so collecting at 5× the live heap rather than 2× costs little
// memory and gives more verified votes/s (measured with GOGC 100 and 400
// alternated: docs/performance.md).
const serveGCPercent = 400
