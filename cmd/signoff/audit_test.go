package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"golang.org/x/sys/unix"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

// TestMain lets a test run this binary as `signoff` in a process of its
// own (for faults no in-process test can make: a file size limit).
func TestMain(m *testing.M) {
	if os.Getenv("SIGNOFF_TEST_RUN_AS_SIGNOFF") == "1" {
		main()
		return
	}
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath)) // the binary signoffBinary built
	}
	os.Exit(code)
}

// serveUntil runs serve in-process on the current environment until the
// returned stop is called, and returns its address.
func serveUntil(t *testing.T) (addr string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	logs := &syncBuffer{}
	done := make(chan int, 1)
	a := &app{stdout: logs, stderr: logs, ready: func(s string) { ready <- s }}
	go func() { done <- a.run(ctx, []string{"serve"}) }()
	select {
	case addr = <-ready:
	case code := <-done:
		cancel()
		t.Fatalf("serve exited %d:\n%s", code, logs)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatalf("serve not listening after 10s:\n%s", logs)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d:\n%s", code, logs)
		}
	}
	t.Cleanup(stop)
	return addr, stop
}

// auditSetup writes a persona owned by a fresh key and points the
// environment at a data dir of its own.
func auditSetup(t *testing.T) (owner *signing.Key, dataDir string) {
	t.Helper()
	dir := t.TempDir()
	owner = signing.NewKey()
	personas := filepath.Join(dir, "personas")
	os.MkdirAll(personas, 0o700)
	os.WriteFile(filepath.Join(personas, "p.yaml"), []byte(strings.ReplaceAll(demoPersona, "OWNER", owner.Npub())), 0o600)
	dataDir = filepath.Join(dir, "data")
	t.Setenv("SIGNOFF_LISTEN", "127.0.0.1:0")
	t.Setenv("SIGNOFF_DATA_DIR", dataDir)
	t.Setenv("SIGNOFF_PERSONAS", personas)
	t.Setenv("SIGNOFF_REDIS_URL", "")
	t.Setenv("SIGNOFF_NOSTR_KEY", "")
	t.Setenv("SIGNOFF_AUDIT_PATH", "")
	return owner, dataDir
}

// askAndAnswer submits a request to the gateway at addr and has owner
// answer it; it returns the vote's HTTP status.
func askAndAnswer(t *testing.T, addr string, owner *signing.Key, action string) (*bot.Request, int) {
	t.Helper()
	r := submitHTTP(t, addr, action)
	return r, reactHTTP(t, addr, owner, r, "✅")
}

func submitHTTP(t *testing.T, addr, action string) *bot.Request {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"persona": "demo", "action": action})
	resp, err := http.Post("http://"+addr+"/v1/requests", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r bot.Request
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&r) != nil {
		t.Fatalf("submit: %s", resp.Status)
	}
	return &r
}

func reactHTTP(t *testing.T, addr string, owner *signing.Key, r *bot.Request, content string) int {
	t.Helper()
	ev := nostr.Event{Kind: nostr.KindReaction, CreatedAt: nostr.Now(), Content: content,
		Tags: nostr.Tags{{"e", r.EventID}, {"p", r.GatewayKey}, {"k", "1"}}}
	if err := owner.Sign(&ev); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ev)
	resp, err := http.Post("http://"+addr+"/v1/nostr/events", "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestSecondGatewayOnOneDataDirRefuses: two gateways on one data dir
// would interleave one chain from two heads; the second refuses to start.
func TestSecondGatewayOnOneDataDirRefuses(t *testing.T) {
	_, dataDir := auditSetup(t)
	serveUntil(t)
	code, out, errs := cli("serve")
	if code == 0 || !strings.Contains(out+errs, "already running on data dir "+dataDir) {
		t.Fatalf("second serve = %d %q; want a refusal naming the data dir", code, out+errs)
	}
}

// TestAuditVerifyAttacks: issue 9 item 7, through `signoff audit verify`
// as a person runs it after the gateway stopped. Each attack verified
// "ok" before checkpoints were published and the key held by default.
func TestAuditVerifyAttacks(t *testing.T) {
	owner, dataDir := auditSetup(t)
	addr, stop := serveUntil(t)
	for i := range 3 {
		if _, code := askAndAnswer(t, addr, owner, fmt.Sprint("rm -rf /tmp/x", i)); code != http.StatusOK {
			t.Fatalf("vote: %d", code)
		}
	}
	stop() // signs the closing checkpoint
	logPath := filepath.Join(dataDir, "audit.jsonl")
	orig, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if c, out, errs := cli("audit", "verify"); c != 0 || !strings.Contains(out, "chain intact") {
		t.Fatalf("untouched log: %d %q %q", c, out, errs)
	}
	lines := bytes.SplitAfter(orig, []byte("\n"))
	lines = lines[:len(lines)-1]
	mallory := signing.NewKey()
	freshDir := t.TempDir()
	fl, _ := signing.OpenAudit(filepath.Join(freshDir, "audit.jsonl"), mallory)
	fl.Append(context.Background(), bot.AuditEntry{Type: "request", RequestID: "r1", Data: map[string]string{"action": "ls"}})
	fl.Close()
	fresh, _ := os.ReadFile(filepath.Join(freshDir, "audit.jsonl"))
	freshCP, _ := os.ReadFile(filepath.Join(freshDir, "audit.jsonl.checkpoint"))
	origCP, _ := os.ReadFile(logPath + ".checkpoint")
	torn := bytes.Join([][]byte{bytes.Join(lines[:2], nil), []byte(`{"seq":3,"ti` + "\n"), bytes.Join(lines[2:], nil)}, nil)

	for _, tc := range []struct {
		name       string
		log, cp    []byte
		code       int
		want       string
		extraFlags []string
	}{
		{"dropping the last records", bytes.Join(lines[:len(lines)-3], nil), origCP, 1, "TRUNCATED", nil},
		{"emptying the log", nil, origCP, 1, "TRUNCATED", nil},
		{"a fresh chain under a new key", fresh, origCP, 1, "BROKEN", nil},
		{"a fresh chain and its checkpoint under a new key", fresh, freshCP, 1, "BROKEN: published checkpoint", nil},
		{"a fresh chain under a new key, that key named", fresh, freshCP, 0, "chain intact", []string{"--signer", mallory.Npub()}},
		{"a torn line", torn, origCP, 0, "TORN", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(logPath, tc.log, 0o600)
			os.WriteFile(logPath+".checkpoint", tc.cp, 0o600)
			c, out, errs := cli(append(append([]string{"audit", "verify"}, tc.extraFlags...), logPath)...)
			if c != tc.code || !strings.Contains(out+errs, tc.want) {
				t.Errorf("audit verify = %d %q %q; want %d and %q", c, out, errs, tc.code, tc.want)
			}
		})
	}
	// With no key in the data dir and none named, verify refuses to guess.
	os.WriteFile(logPath, orig, 0o600)
	os.WriteFile(logPath+".checkpoint", origCP, 0o600)
	os.Rename(filepath.Join(dataDir, "gateway.key"), filepath.Join(dataDir, "gateway.key.moved"))
	if c, out, errs := cli("audit", "verify"); c == 0 || !strings.Contains(out+errs, "--signer") {
		t.Errorf("no key: %d %q %q; want a refusal that names --signer", c, out, errs)
	}
}

// TestAuditExportAndTruncationAgainstTheStore: with a real Redis the chain
// lives in the store; `audit export` writes it whole, and a local log cut
// short (checkpoint file deleted too) is caught against the store's head.
func TestAuditExportAndTruncationAgainstTheStore(t *testing.T) {
	url := startRedis(t)
	owner, dataDir := auditSetup(t)
	t.Setenv("SIGNOFF_REDIS_URL", url)
	addr, stop := serveUntil(t)
	for i := range 3 {
		if _, code := askAndAnswer(t, addr, owner, fmt.Sprint("deploy ", i)); code != http.StatusOK {
			t.Fatalf("vote: %d", code)
		}
	}
	stop()
	out := filepath.Join(t.TempDir(), "export.jsonl")
	if c, o, errs := cli("audit", "export", "--out", out); c != 0 || !strings.Contains(errs, "exported") {
		t.Fatalf("export = %d %q %q", c, o, errs)
	}
	if c, o, errs := cli("audit", "verify", out); c != 0 || !strings.Contains(o, "chain intact") {
		t.Fatalf("verify export = %d %q %q", c, o, errs)
	}
	// To standard output: the same records, and a hint a person can run.
	c, o, errs := cli("audit", "export")
	if b, _ := os.ReadFile(out); c != 0 || o != string(b) {
		t.Fatalf("export to standard output = %d, %d bytes; want the %d bytes of --out", c, len(o), len(b))
	}
	if !strings.Contains(errs, "signoff audit verify -") || strings.Contains(errs, "verify standard output") {
		t.Errorf("export to standard output says %q; want a verify command that can be run", errs)
	}
	logPath := filepath.Join(dataDir, "audit.jsonl")
	b, _ := os.ReadFile(logPath)
	lines := bytes.SplitAfter(b, []byte("\n"))
	os.WriteFile(logPath, bytes.Join(lines[:3], nil), 0o600)
	os.Remove(logPath + ".checkpoint")
	if c, o, errs := cli("audit", "verify"); c != 1 || !strings.Contains(o, "the store's head") {
		t.Fatalf("cut log vs the store = %d %q %q; want TRUNCATED against the store's head", c, o, errs)
	}
	// A gateway started on that data dir (a new container) takes the
	// chain back from the store.
	_, stop = serveUntil(t)
	stop()
	if c, o, errs := cli("audit", "verify"); c != 0 || !strings.Contains(o, "chain intact") {
		t.Fatalf("after a restart on the cut log = %d %q %q; want the file whole again", c, o, errs)
	}
}

// startRedis runs a redis-server of this test's own on a free port (the
// gateway's keys use the fixed prefix "signoff", so not the shared one).
func startRedis(t *testing.T) string { return bottest.StartRedisServer(t).URL() }

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestVoteRefusedWhenTheLogFileHitsItsSizeLimit: issue 9 item 7 with a
// real process — the gateway's file size limit (ulimit -f, RLIMIT_FSIZE)
// is lowered to the log's size. A vote used to count and approve with no
// record; now it is refused with a 503 and the request stays pending, and
// once the limit is lifted the same answer approves.
func TestVoteRefusedWhenTheLogFileHitsItsSizeLimit(t *testing.T) {
	owner, dataDir := auditSetup(t)
	port := freePort(t)
	addr := fmt.Sprint("127.0.0.1:", port)
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Env = append(os.Environ(), "SIGNOFF_TEST_RUN_AS_SIGNOFF=1", "SIGNOFF_LISTEN="+addr)
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(15 * time.Second)
	for {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := submitHTTP(t, addr, "rm -rf /srv/data")
	logPath := filepath.Join(dataDir, "audit.jsonl")
	fi, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	limit := unix.Rlimit{Cur: uint64(fi.Size()), Max: unix.RLIM_INFINITY}
	if err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_FSIZE, &limit, nil); err != nil {
		t.Skipf("prlimit: %v", err)
	}
	if code := reactHTTP(t, addr, owner, r, "✅"); code != http.StatusServiceUnavailable {
		t.Fatalf("vote with the log at its size limit: HTTP %d, want 503\n%s", code, logs.String())
	}
	resp, err := http.Get("http://" + addr + "/v1/requests/" + r.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got bot.Request
	json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if got.Status != bot.Pending || len(got.Votes) != 0 {
		t.Fatalf("after the refused vote: %s with %d votes, want pending with none", got.Status, len(got.Votes))
	}
	limit.Cur = unix.RLIM_INFINITY
	if err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_FSIZE, &limit, nil); err != nil {
		t.Fatal(err)
	}
	if code := reactHTTP(t, addr, owner, r, "✅"); code != http.StatusOK {
		t.Fatalf("vote once the limit is lifted: HTTP %d", code)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if c, out, errs := cli("audit", "verify"); c != 0 || !strings.Contains(out, "chain intact") {
		t.Fatalf("audit verify after the fault = %d %q %q", c, out, errs)
	}
}

// TestExportTakenWhileTheFleetWritesIsNoFalseAlarm: an export is held to
// the head as of the export (its trailer), not to the store's head, which
// moves on while the fleet writes; an export cut short is still caught,
// and so is a local log cut short, against the store's witness.
func TestExportTakenWhileTheFleetWritesIsNoFalseAlarm(t *testing.T) {
	url := startRedis(t)
	owner, dataDir := auditSetup(t)
	t.Setenv("SIGNOFF_REDIS_URL", url)
	addr, stopServe := serveUntil(t)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopServe()
		}
	}
	defer stop()
	for i := range 2 {
		if _, code := askAndAnswer(t, addr, owner, fmt.Sprint("deploy ", i)); code != http.StatusOK {
			t.Fatalf("vote: %d", code)
		}
	}
	out := filepath.Join(t.TempDir(), "export.jsonl")
	if c, o, errs := cli("audit", "export", "--out", out); c != 0 {
		t.Fatalf("export = %d %q %q", c, o, errs)
	}
	// The fleet keeps writing, and signs a checkpoint past the export.
	for i := range 2 {
		if _, code := askAndAnswer(t, addr, owner, fmt.Sprint("more ", i)); code != http.StatusOK {
			t.Fatalf("vote: %d", code)
		}
	}
	c, o, errs := cli("audit", "verify", out)
	if c != 0 || !strings.Contains(o, "chain intact") || !strings.Contains(o, "export: held to its own head") || !strings.Contains(o, "grown since") {
		t.Errorf("verify of an export while the fleet writes = %d %q %q; want ok, held to the export's head", c, o, errs)
	}
	// An export cut short: its own trailer says where it ended.
	b, _ := os.ReadFile(out)
	lines := bytes.SplitAfter(b, []byte("\n"))
	lines = lines[:len(lines)-1] // the empty tail after the last newline
	cut := append(append([][]byte{}, lines[:len(lines)-3]...), lines[len(lines)-1])
	os.WriteFile(out, bytes.Join(cut, nil), 0o600)
	if c, o, errs := cli("audit", "verify", out); c != 1 || !strings.Contains(o, "TRUNCATED") || !strings.Contains(o, "2 record(s) missing") {
		t.Errorf("verify of a cut export = %d %q %q; want TRUNCATED, 2 record(s) missing", c, o, errs)
	}
	// The gateway's own log, cut: the store's witness holds a later
	// checkpoint (the agent removed the files beside the log).
	rdb, err := qredis.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w, ok, _ := qredis.New(rdb, "signoff").AuditWitness().Newest(context.Background(), signerOf(t))
		if ok && w.Seq > 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint past seq 3 witnessed in the store after 10s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	logPath := filepath.Join(dataDir, "audit.jsonl")
	b, _ = os.ReadFile(logPath)
	lines = bytes.SplitAfter(b, []byte("\n"))
	os.WriteFile(logPath, bytes.Join(lines[:3], nil), 0o600)
	os.Remove(logPath + ".checkpoint")
	os.Remove(filepath.Join(dataDir, "audit.witness"))
	if c, o, errs := cli("audit", "verify"); c != 1 || !strings.Contains(o, "the checkpoint witnessed by the store's witness") || !strings.Contains(o, "record(s) missing") {
		t.Errorf("cut log vs the store's witness = %d %q %q", c, o, errs)
	}
}

// signerOf is the gateway key (hex) of the data dir SIGNOFF_DATA_DIR names.
func signerOf(t *testing.T) string {
	t.Helper()
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	k, err := auditSigner(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	return k
}
