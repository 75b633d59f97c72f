package faults

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

// personCLI runs the signoff binary as the persona's owner: the fleet's
// configuration and alice's key (SIGNOFF_KEY), plus extra variables.
func (f *fleet) personCLI(t *testing.T, extra []string, args ...string) (int, string) {
	t.Helper()
	keyFile := filepath.Join(f.dir, "alice.key")
	if _, err := os.Stat(keyFile); err != nil {
		if err := signing.WriteKey(keyFile, f.people.alice); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(signoffBin, args...)
	cmd.Env = append(append(f.env(f.dir), "SIGNOFF_DATA_DIR="+filepath.Join(f.dir, "cli"), "SIGNOFF_KEY="+keyFile), extra...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("run signoff %v: %v", args, err)
	}
	return 0, string(out)
}

// tokenless calls r from loopback with no token.
func (r *replica) tokenless(t *testing.T, method, path, body string) int {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+r.addr+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := probe.Do(req)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, r.name, err)
	}
	res.Body.Close()
	return res.StatusCode
}

func eventually(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not so after %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAgentCannotMintATokenOnAFlushedRedis is the fleet: three
// replicas on one Redis, all started before any token; the person makes
// the first admin token on the store (`signoff tokens create` with
// SIGNOFF_REDIS_URL, signed with their key); replica 3 never serves a
// call without a token. Redis is then emptied (FLUSHALL). Replica 3
// refuses tokenless calls and the tokenless "first" admin token, logs
// TOKENS LOST as it happens, and fails /readyz until the person makes a
// token again; the refusals, made while the replicas restore the chain,
// are all audited.
func TestAgentCannotMintATokenOnAFlushedRedis(t *testing.T) {
	redis := startRedis(t, false)
	f := newFleet(t, redis.url())
	r1, r2, r3 := f.start(), f.start(), f.start()
	for _, r := range []*replica{r1, r2, r3} {
		r.waitReady(t, 10*time.Second)
	}
	// Some history in the chain, so there is something to restore.
	if code := r1.tokenless(t, "GET", "/v1/requests", ""); code != 200 {
		t.Fatalf("tokenless call before any token: %d", code)
	}
	if code, out := f.personCLI(t, nil, "tokens", "create", "--name", "admin", "--scopes", "admin"); code != 0 {
		t.Fatalf("the person's first token on the store = %d\n%s", code, out)
	}
	mark := filepath.Join(r3.data, "tokens.closed")
	eventually(t, 5*time.Second, "replica 3 writes tokens.closed once the token exists", func() bool {
		_, err := os.Stat(mark)
		return err == nil
	})

	if err := redis.client(t).FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "replica 3 logs TOKENS LOST at runtime", func() bool {
		return strings.Contains(r3.p.logs.String(), "TOKENS LOST")
	})
	eventually(t, 5*time.Second, "replica 3's /readyz fails with TOKENS LOST", func() bool {
		code, body := r3.ready()
		return code == http.StatusServiceUnavailable && strings.Contains(body, "TOKENS LOST")
	})
	// The agent on loopback, at every replica at once.
	var wg sync.WaitGroup
	codes := make(chan [2]int, 6)
	for _, r := range []*replica{r1, r2, r3} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- [2]int{r.tokenless(t, "GET", "/v1/requests", ""), r.tokenless(t, "POST", "/v1/tokens", `{"name":"agent-admin","scopes":["admin"]}`)}
		}()
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c[0] != 401 || c[1] != 401 {
			t.Errorf("tokenless calls on the flushed store: GET %d, POST /v1/tokens %d, want 401 and 401", c[0], c[1])
		}
	}
	for _, r := range []*replica{r1, r2, r3} {
		if strings.Contains(r.p.logs.String(), "cannot audit a refused call") {
			t.Errorf("%s did not audit a refusal:\n%s", r.name, tail(r.p.logs.String(), 30))
		}
	}

	// The person makes a token again, with their key, through replica 3.
	code, out := f.personCLI(t, []string{"SIGNOFF_REDIS_URL=", "SIGNOFF_URL=http://" + r3.addr}, "tokens", "create", "--name", "admin2", "--scopes", "admin")
	if code != 0 {
		t.Fatalf("the person's new token = %d\n%s", code, out)
	}
	r3.waitReady(t, 5*time.Second)
	// The store's chain, restored by the replicas, holds all six refusals.
	store := qredis.New(redis.client(t), "signoff")
	seq, _, err := store.AuditHead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lines, err := store.AuditRecords(context.Background(), 0, int(seq))
	if err != nil {
		t.Fatal(err)
	}
	refusals := 0
	for _, l := range lines {
		if strings.Contains(string(l), `"type":"auth"`) && strings.Contains(string(l), `"remote":"127.0.0.1"`) {
			refusals++
		}
	}
	if refusals < 6 || len(lines) != int(seq) {
		t.Errorf("the store's chain (%d of %d records) holds %d refusals, want 6", len(lines), seq, refusals)
	}
}

func countRecords(t *testing.T, path, typ string) int {
	n := 0
	for _, rec := range readRecords(t, path) {
		if rec.Type == typ {
			n++
		}
	}
	return n
}
