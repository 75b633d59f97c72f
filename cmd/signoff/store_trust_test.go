package main

import (
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot/bottest"
)

// redisWithCLI starts a redis-server of the test's own on a free loopback port
// and returns its URL, or skips when redis-server or redis-cli is missing.
func redisWithCLI(t *testing.T) (url, port string) {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli not installed")
	}
	r := bottest.StartRedisServer(t)
	return r.URL(), fmt.Sprint(r.Port)
}

// TestRedisStatusWriteDoesNotApprove: the agent reaches the store with
// redis-cli, writes status approved into a waiting request's hash and
// publishes the decision. The waiting `signoff request` must not exit 0:
// no vote, no decision record.
func TestRedisStatusWriteDoesNotApprove(t *testing.T) {
	url, port := redisWithCLI(t)
	gatewayOn(t, demoPersona, url)
	id, result, code := startRequest(t, "--timeout", "30s", "--", "rm", "-rf", "/srv/data")

	key := "signoff:req:{" + id + "}"
	now := fmt.Sprint(time.Now().UnixMilli())
	for _, args := range [][]string{
		{"HSET", key, "status", "approved", "decided_by", "alice", "decided_at", now},
		{"PUBLISH", "signoff:decided", id},
		{"PUBLISH", "signoff:decided:final", id}, // the channel gateways follow for decisions
	} {
		out, err := exec.Command("redis-cli", append([]string{"-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v %s", args, err, out)
		}
	}
	select {
	case c := <-code:
		res := <-result
		if c == 0 {
			t.Fatalf("signoff request exited 0 on a status written by hand:\n%s", res[1])
		}
		if !strings.Contains(res[1], "no decision record") {
			t.Errorf("request stderr does not say why:\n%s", res[1])
		}
	case <-time.After(25 * time.Second):
		t.Fatal("signoff request still waiting 25s after the forged status; want a denial")
	}
}

func TestServeWarnsOfRedisWithoutPassword(t *testing.T) {
	for _, tc := range []struct {
		url  string
		warn bool
	}{
		{"redis://10.0.0.5:6379/0", true},
		{"redis://redis.internal:6379/0", true},
		{"redis://:s3cret@10.0.0.5:6379/0", false},
		{"redis://user:s3cret@redis.internal:6379/0", false},
		{"redis://127.0.0.1:6379/0", false},
		{"redis://localhost:6379/0", false},
	} {
		var b syncBuffer
		warnOpenRedis(tc.url, slog.New(slog.NewTextHandler(&b, nil)))
		if got := strings.Contains(b.String(), "without a password"); got != tc.warn {
			t.Errorf("%s: warned %v, want %v", tc.url, got, tc.warn)
		}
	}
}
