package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot/bench"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

func init() { commands["bench"] = benchCmd }

const benchSynopsis = "bench [--spawn [--votes K] [--group-commit=false]] [--checked-signing] [--persona P --key FILE…] [--redis URL] [--concurrency N] [--duration D | -n N] [--unloaded M] [--cpuprofile FILE]"

// benchCmd is the load generator (bot/bench): against the gateway at
// SIGNOFF_URL, or one it starts in this process (--spawn) on a Redis of
// its own, with a bench persona whose keys it holds.
func benchCmd(ctx context.Context, a *app, args []string) int {
	fs := a.flags("bench", benchSynopsis)
	spawn := fs.Bool("spawn", false, "start a gateway in this process on loopback, with its own redis-server and a bench persona (rate limit off)")
	votes := fs.Int("votes", 1, "with --spawn: votes that decide a request (1: the owner alone; K>1: K members, approvalQuorum K)")
	persona := fs.String("persona", "", "without --spawn: the persona to ask for")
	var keys stringList
	fs.Var(&keys, "key", "without --spawn: a voter's key file, in the order they vote (repeatable; the owner's alone decides)")
	redisURL := fs.String("redis", "", "the gateway's Redis (the floor's PING, and the design's minimum vote on scratch keys 'signoff-bench-minimum-*', deleted at the end; with --spawn, used instead of starting redis-server — its 'signoff' keys are the bench's)")
	conc := fs.Int("concurrency", 16, "clients running lifecycles at once in the loaded phase (and answering requests in the votes phase)")
	dur := fs.Duration("duration", 10*time.Second, "length of the loaded phase, of the votes phase (its requests made and votes signed before it), and of the design's minimum vote under the same load")
	n := fs.Int("n", 0, "run this many lifecycles in the loaded phase instead of --duration (as many requests in the votes phase, and their votes' worth of the minimum)")
	unloaded := fs.Int("unloaded", 200, "lifecycles run one at a time (the unloaded vote p50 and the floor beside it)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the loaded phase here (with --spawn it holds the gateway too)")
	checked := fs.Bool("checked-signing", false, "sign each reaction as `signoff approve` does, verifying the signature made (the default makes the same bytes without that check, a third to a half of the cost, so the client takes less of the machine it shares with the gateway)")
	groupCommit := fs.Bool("group-commit", true, "with --spawn: the audit log commits the records that wait for its chain in one round trip (false: one at a time under its lock, as before)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return a.failf("bench takes no arguments")
	}
	if *conc < 1 || *votes < 1 || *n < 0 || *unloaded < 1 || *dur <= 0 {
		return a.failf("--concurrency, --votes and --unloaded must be at least 1, -n not negative, --duration positive")
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	bc := bench.Config{Concurrency: *conc, Duration: *dur, N: *n, Unloaded: *unloaded, Out: a.stdout, Progress: a.stderr, CheckedSigning: *checked}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return a.failf("cpu profile: %v", err)
		}
		defer f.Close()
		bc.CPUProfile = f
	}

	if *spawn {
		if *persona != "" || len(keys) > 0 {
			return a.failf("--spawn makes its own persona and keys; --persona and --key are for a gateway at SIGNOFF_URL")
		}
		stop, err := spawnGateway(ctx, a, cfg, &bc, *votes, *redisURL, *groupCommit)
		if err != nil {
			return a.fail(err)
		}
		defer stop()
	} else {
		if *persona == "" || len(keys) == 0 {
			fs.Usage()
			return a.failf("name the persona and a voter's key (--persona P --key FILE), or use --spawn")
		}
		if !loopbackURL(cfg.URL) {
			return a.failf("SIGNOFF_URL=%s is not a loopback address: bench runs only against this machine", cfg.URL)
		}
		for _, path := range keys {
			k, err := readKey(path)
			if err != nil {
				return a.fail(err)
			}
			bc.Voters = append(bc.Voters, k)
		}
		bc.URL, bc.Token, bc.Persona = cfg.URL, string(cfg.Token), *persona
		u := *redisURL
		if u == "" {
			u = "redis://127.0.0.1:6379"
		}
		rdb, err := qredis.Open(u)
		if err != nil {
			return a.fail(err)
		}
		defer rdb.Close()
		bc.Redis = rdb
		if *redisURL != "" {
			bc.Audit = qredis.New(rdb, "signoff")
		}
		bc.Notes = append(bc.Notes, "against the gateway at SIGNOFF_URL; a per-client rate limit there (SIGNOFF_RATE_LIMIT) caps what this measures")
	}
	if _, err := bench.Run(ctx, bc); err != nil {
		return a.fail(err)
	}
	return 0
}

func readKey(path string) (*signing.Key, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read key %s: %v", path, err)
	}
	k, err := signing.ParseKey(string(raw))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, nil
}

// spawnGateway runs the real `signoff serve` wiring in this process on a
// loopback port, on a redis-server of its own (or redisURL), with a bench
// persona whose keys bc gets. stop ends both and removes their files.
func spawnGateway(ctx context.Context, a *app, cfg *config, bc *bench.Config, votes int, redisURL string, groupCommit bool) (stop func(), err error) {
	dir, err := os.MkdirTemp("", "signoff-bench-")
	if err != nil {
		return nil, err
	}
	var stops []func()
	cleanup := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		os.RemoveAll(dir)
	}
	defer func() {
		if err != nil {
			cleanup() // stop is nil when an error is returned
		}
	}()
	note := "redis " + redactURL(redisURL)
	if redisURL == "" {
		var kill func()
		redisURL, kill, err = startBenchRedis(ctx, dir)
		if err != nil {
			return nil, err
		}
		stops = append(stops, kill)
		note = "its own redis-server at " + redisURL + " (no persistence)"
	}

	owner := signing.NewKey()
	yaml := "name: bench\nowner:\n  name: bench-owner\n  nostr: " + owner.Npub() + "\n"
	if votes == 1 {
		bc.Voters = []*signing.Key{owner}
	} else {
		yaml += "members:\n"
		for i := range votes {
			k := signing.NewKey()
			bc.Voters = append(bc.Voters, k)
			yaml += fmt.Sprintf("  - name: m%d\n    nostr: %s\n", i+1, k.Npub())
		}
	}
	quorum := 0 // the owner alone
	if votes > 1 {
		quorum = votes
	}
	yaml += fmt.Sprintf("approvalQuorum: %d\ndenyQuorum: 1\ntimeout: 5m\nchannels:\n  - terminal: {}\n", quorum)
	personas := filepath.Join(dir, "personas")
	if err := os.MkdirAll(personas, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(personas, "bench.yaml"), []byte(yaml), 0o600); err != nil {
		return nil, err
	}

	// The rate limit of the API would measure itself, not the vote path.
	os.Setenv("SIGNOFF_RATE_LIMIT", "0")
	gcfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	gcfg.Listen, gcfg.DataDir, gcfg.Personas, gcfg.RedisURL = "127.0.0.1:0", filepath.Join(dir, "data"), personas, redisURL
	gcfg.AuditPath = filepath.Join(gcfg.DataDir, "audit.jsonl")
	gcfg.NostrKey, gcfg.Token, gcfg.TokenFile, gcfg.RequireTokens = "", "", "", false
	logPath := filepath.Join(dir, "gateway.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	stops = append(stops, func() { logf.Close() })

	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	addr := make(chan string, 1)
	exited := make(chan int, 1)
	var audit *signing.AuditLog
	ga := &app{stdout: logf, stderr: logf, ready: func(s string) { addr <- s },
		auditOptions: func(o *signing.AuditOptions) { o.NoBatch = !groupCommit },
		auditOpened:  func(l *signing.AuditLog) { audit = l }}
	go func() { exited <- serveWith(sctx, ga, gcfg) }()
	stops = append(stops, func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			fmt.Fprintln(a.stderr, "bench: the spawned gateway did not stop within 15s")
		}
	})
	select {
	case s := <-addr:
		bc.URL = "http://" + s
	case code := <-exited:
		exited <- code
		return nil, fmt.Errorf("the spawned gateway exited (%d):\n%s", code, tail(logPath))
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("the spawned gateway did not listen within 30s:\n%s", tail(logPath))
	}
	rdb, err := qredis.Open(redisURL)
	if err != nil {
		return nil, err
	}
	stops = append(stops, func() { rdb.Close() })
	bc.Redis, bc.Audit, bc.Persona = rdb, qredis.New(rdb, "signoff"), "bench"
	bc.GatewayHere = true
	// audit is set: the gateway opens its log before it listens.
	bc.Loaded = audit.ResetStats
	bc.Gateway = func() []string {
		st := audit.Stats()
		how := "group commit"
		if !audit.Batches() {
			how = "one at a time under the chain's lock"
		}
		per := 0.0
		if st.Commits > 0 {
			per = float64(st.Records) / float64(st.Commits)
		}
		return []string{
			fmt.Sprintf("audit (%s): %d records in %d commits (%.1f a commit)", how, st.Records, st.Commits, per),
			fmt.Sprintf("audit wait for the chain           p50 %8s  p99 %8s", bench.Dur(st.Wait50), bench.Dur(st.Wait99)),
			fmt.Sprintf("audit commit round trip            p50 %8s  p99 %8s", bench.Dur(st.Commit50), bench.Dur(st.Commit99)),
		}
	}
	bc.Notes = append(bc.Notes,
		"spawned in this process: the real `signoff serve` wiring on loopback, "+note,
		"SIGNOFF_RATE_LIMIT=0: the API's per-client rate limit is off for this run",
		"gateway log: "+logPath+" (removed at exit)")
	return cleanup, nil
}

// startBenchRedis runs redis-server on a free loopback port, without
// persistence, and returns its URL and how to stop it.
func startBenchRedis(ctx context.Context, dir string) (string, func(), error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, errors.New("bench --spawn starts its own redis-server and none is installed (apt-get install redis-server), or name one with --redis URL")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start redis-server: %w", err)
	}
	kill := func() { cmd.Process.Kill(); cmd.Wait() }
	u := "redis://127.0.0.1:" + port
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:" + port})
	defer rdb.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if rdb.Ping(ctx).Err() == nil {
			return u, kill, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			kill()
			return "", nil, errors.New("the bench's redis-server did not answer within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tail is the end of a log file, for an error message.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	s := string(b)
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return strings.TrimRight(s, "\n")
}
