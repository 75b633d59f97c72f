package faults

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/signing"

	"github.com/signoff/signoff/bot/bottest"
)

var (
	signoffBin  string // built once by TestMain
	redisServer string // path of redis-server, "" when absent
	buildErr    error
)

func TestMain(m *testing.M) {
	redisServer, _ = exec.LookPath("redis-server")
	dir, err := os.MkdirTemp("", "signoff-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if redisServer != "" {
		signoffBin = filepath.Join(dir, "signoff")
		out, err := exec.Command("go", "build", "-o", signoffBin, "github.com/signoff/signoff/cmd/signoff").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build signoff: %v\n%s", err, out)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needProcesses skips the test when redis-server is missing, and fails it
// when the binary did not build.
func needProcesses(t *testing.T) {
	t.Helper()
	if redisServer == "" {
		t.Skip("redis-server is not installed: the fault tests start their own Redis processes (apt-get install redis-server)")
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// freePort returns a loopback port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// logBuffer collects a process's output for the failure message.
type logBuffer = bottest.Buffer

// proc is a child process that a test owns: it is killed when the test
// ends, whatever happened.
type proc struct {
	name string
	cmd  *exec.Cmd
	logs *logBuffer
	done chan struct{}
	err  error
}

func startProc(t *testing.T, name string, env []string, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, logs: &logBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.signal(syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("--- %s output:\n%s", name, tail(p.logs.String(), 60))
		}
	})
	return p
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (p *proc) signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Signal(sig)
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits (boundedly) for the process to end.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.signal(syscall.SIGKILL)
		<-p.done
		t.Errorf("%s did not stop within 15s of SIGTERM", p.name)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

// baseEnv is the environment of every child: no SIGNOFF_* inherited.
func baseEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir()}
}

// --- Redis -----------------------------------------------------------------

// redisProc is one redis-server on a loopback port. Restart keeps its
// port and folder, so with persistence it comes back with its data.
type redisProc struct {
	t       *testing.T
	port    int
	dir     string
	persist bool
	extra   []string
	p       *proc
	starts  int
}

func startRedis(t *testing.T, persist bool, extra ...string) *redisProc {
	t.Helper()
	needProcesses(t)
	r := &redisProc{t: t, port: freePort(t), dir: t.TempDir(), persist: persist, extra: extra}
	r.start()
	return r
}

func (r *redisProc) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }
func (r *redisProc) url() string  { return "redis://" + r.addr() + "/0" }

func (r *redisProc) start() {
	r.t.Helper()
	args := []string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--daemonize", "no", "--logfile", "", "--databases", "1"}
	if r.persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	args = append(args, r.extra...)
	r.starts++
	r.p = startProc(r.t, fmt.Sprintf("redis-server :%d (start %d)", r.port, r.starts), baseEnv(r.dir), redisServer, args...)
	c := goredis.NewClient(&goredis.Options{Addr: r.addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if r.p.exited() || time.Now().After(deadline) {
			r.t.Fatalf("redis-server on %s did not answer: %v\n%s", r.addr(), err, r.p.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// crash kills Redis with SIGKILL: what is not persisted is lost.
func (r *redisProc) crash() { r.p.kill() }

func (r *redisProc) client(t *testing.T) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: r.addr()})
	t.Cleanup(func() { c.Close() })
	return c
}

// --- signoff serve -----------------------------------------------------------

// people are the persona's electorate: alice owns it; bob and carol are
// members, two of whom approve without her.
type people struct {
	alice, bob, carol *signing.Key
}

func newPeople() people {
	return people{signing.NewKey(), signing.NewKey(), signing.NewKey()}
}

func (pp people) persona() string {
	return fmt.Sprintf(`name: demo
owner:
  name: alice
  nostr: %s
members:
  - name: bob
    nostr: %s
  - name: carol
    nostr: %s
approvalQuorum: 2
timeout: 2m
`, pp.alice.Npub(), pp.bob.Npub(), pp.carol.Npub())
}

// fleet is several `signoff serve` replicas on one Redis URL, sharing a
// gateway key (clients pin it) and a persona folder, each with its own
// data dir and audit file.
type fleet struct {
	t        *testing.T
	redisURL string
	dir      string
	key      *signing.Key
	people   people
	personas string
	replicas []*replica
	extraEnv []string // added to every replica's environment
	// tokenSecret is the replicas' shared SIGNOFF_TOKEN_SECRET (tokens
	// made on one are checked on all).
	tokenSecret string
}

type replica struct {
	name  string
	addr  string
	data  string
	audit string
	p     *proc
	api   *httpapi.Client
}

func newFleet(t *testing.T, redisURL string) *fleet {
	t.Helper()
	needProcesses(t)
	f := &fleet{t: t, redisURL: redisURL, dir: t.TempDir(), key: signing.NewKey(), people: newPeople(), tokenSecret: randomHex(32)}
	f.personas = filepath.Join(f.dir, "personas")
	if err := os.MkdirAll(f.personas, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.personas, "demo.yaml"), []byte(f.people.persona()), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fleet) env(data string) []string {
	return append(baseEnv(data),
		"SIGNOFF_REDIS_URL="+f.redisURL,
		"SIGNOFF_PERSONAS="+f.personas,
		"SIGNOFF_NOSTR_KEY="+f.key.Nsec(),
		"SIGNOFF_TOKEN_SECRET="+f.tokenSecret,
		"SIGNOFF_GATEWAY_KEY="+f.key.Npub(), // clients believe receipts from this key only
		"SIGNOFF_LOG_LEVEL=info",
	)
}

func (f *fleet) replicaEnv(data string) []string {
	return append(f.env(data), f.extraEnv...)
}

// start runs one more replica and waits until it answers /healthz.
func (f *fleet) start() *replica {
	f.t.Helper()
	return f.startWith()
}

// startWith is start with variables added to this replica's environment.
func (f *fleet) startWith(extra ...string) *replica {
	f.t.Helper()
	n := len(f.replicas) + 1
	r := &replica{name: fmt.Sprintf("replica-%d", n), addr: "127.0.0.1:" + strconv.Itoa(freePort(f.t))}
	r.data = filepath.Join(f.dir, r.name)
	r.audit = filepath.Join(r.data, "audit.jsonl")
	env := append(f.replicaEnv(r.data), "SIGNOFF_LISTEN="+r.addr, "SIGNOFF_DATA_DIR="+r.data, "SIGNOFF_AUDIT_PATH="+r.audit)
	env = append(env, extra...)
	r.p = startProc(f.t, r.name, env, signoffBin, "serve")
	r.api = httpapi.NewClient("http://" + r.addr)
	deadline := time.Now().Add(15 * time.Second)
	for !r.healthy() {
		if r.p.exited() || time.Now().After(deadline) {
			f.t.Fatalf("%s did not come up on %s:\n%s", r.name, r.addr, r.p.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.replicas = append(f.replicas, r)
	return r
}

var probe = &http.Client{Timeout: 3 * time.Second}

func (r *replica) healthy() bool {
	res, err := probe.Get("http://" + r.addr + "/healthz")
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// ready returns /readyz's status and body.
func (r *replica) ready() (int, string) {
	res, err := probe.Get("http://" + r.addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// waitReady waits until /readyz answers 200.
func (r *replica) waitReady(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		code, body := r.ready()
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %s: %d %s", r.name, within, code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// submit files a dangerous request through r.
func (f *fleet) submit(t *testing.T, r *replica, action string) *bot.Request {
	t.Helper()
	req, err := r.api.Submit(ctxT(t, 10*time.Second), bot.NewRequest{Persona: "demo", Action: action, Reason: "fault test"})
	if err != nil {
		t.Fatalf("submit %q to %s: %v", action, r.name, err)
	}
	if req.Status != bot.Pending {
		t.Fatalf("submitted %q is %s (%s), want pending", action, req.Status, req.DecisionReason)
	}
	return req
}

// reaction is k's signed ✅ or ❌ on req.
func reaction(t *testing.T, k *signing.Key, req *bot.Request, c bot.Choice) []byte {
	t.Helper()
	ev, err := signing.NewReaction(k, req.EventID, req.GatewayKey, c, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func (r *replica) vote(t *testing.T, ev []byte) httpapi.VoteResponse {
	t.Helper()
	out, err := r.api.PostEvent(ctxT(t, 10*time.Second), ev)
	if err != nil {
		t.Fatalf("vote through %s: %v", r.name, err)
	}
	return out
}

// --- the audit trail, at the end of every run ----------------------------------

// checkAudit stops the replicas still running (so their files are
// complete), verifies the trail, and checks that each request in reqs has
// exactly one decision record when it is decided and none when it is not.
// It uses `signoff audit export` (the whole chain from Redis) when the
// binary has it, and otherwise every replica's own file.
func (f *fleet) checkAudit(t *testing.T, reqs []*bot.Request) {
	t.Helper()
	final := map[string]bot.Status{}
	var live *replica
	for _, r := range f.replicas {
		if !r.p.exited() {
			live = r
			break
		}
	}
	if live == nil {
		t.Fatal("checkAudit needs one live replica to read the final statuses")
	}
	for _, q := range reqs {
		got, err := live.api.Get(ctxT(t, 10*time.Second), q.ID)
		if err != nil {
			t.Fatalf("get %s: %v", q.ID, err)
		}
		final[q.ID] = got.Status
	}
	for _, r := range f.replicas {
		if !r.p.exited() {
			r.p.stop(t)
		}
	}

	var files []string
	export := filepath.Join(f.dir, "export.jsonl")
	code, out := f.cli(t, "audit", "export", "--out", export)
	if code == 0 {
		files = []string{export}
		t.Logf("audit: the exported chain of every replica (%s)", strings.TrimSpace(out))
	} else if strings.Contains(out, "usage: signoff audit verify") {
		// No export in this build: each replica's own chain.
		for _, r := range f.replicas {
			if _, err := os.Stat(r.audit); err == nil {
				files = append(files, r.audit)
			}
		}
	} else {
		t.Fatalf("signoff audit export = %d:\n%s", code, out)
	}
	decisions := map[string][]string{}
	for _, path := range files {
		if code, out := f.cli(t, "audit", "verify", "--signer", f.key.Npub(), path); code != 0 {
			t.Errorf("signoff audit verify %s = %d:\n%s", path, code, out)
		}
		for _, rec := range readRecords(t, path) {
			if rec.Type == "decision" {
				var d struct {
					Status bot.Status `json:"status"`
				}
				json.Unmarshal(rec.Data, &d)
				decisions[rec.RequestID] = append(decisions[rec.RequestID], string(d.Status))
			}
		}
	}
	for id, st := range final {
		got := decisions[id]
		switch {
		case st.Final() && len(got) != 1:
			t.Errorf("request %s is %s with %d decision records %v, want exactly 1", id, st, len(got), got)
		case st.Final() && got[0] != string(st):
			t.Errorf("request %s is %s but its decision record says %s", id, st, got[0])
		case !st.Final() && len(got) != 0:
			t.Errorf("request %s is %s but has decision records %v", id, st, got)
		}
	}
}

// cli runs the signoff binary with the fleet's configuration.
func (f *fleet) cli(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(signoffBin, args...)
	cmd.Env = append(f.env(f.dir), "SIGNOFF_DATA_DIR="+filepath.Join(f.dir, "cli"))
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("run signoff %v: %v", args, err)
	}
	return 0, string(out)
}

func readRecords(t *testing.T, path string) []signing.Record {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []signing.Record
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var rec signing.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
