package bottest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server of a test's own, on a free loopback port,
// keeping nothing on disk unless args say so (they follow --save "" and
// --appendonly no, so they can turn either on). It is killed when the
// test ends; Restart kills it and starts it again on the same port and
// dir (a Redis that restarted, empty unless it persisted).
type RedisServer struct {
	t    testing.TB
	bin  string
	Dir  string // its --dir
	Port int
	args []string
	cmd  *exec.Cmd
}

// StartRedisServer starts one, or skips the test when redis-server is
// not installed.
func StartRedisServer(t testing.TB, args ...string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &RedisServer{t: t, bin: bin, Dir: t.TempDir(), Port: ln.Addr().(*net.TCPAddr).Port, args: args}
	ln.Close()
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// Addr is its host:port.
func (r *RedisServer) Addr() string { return fmt.Sprintf("127.0.0.1:%d", r.Port) }

// URL is its database 0.
func (r *RedisServer) URL() string { return "redis://" + r.Addr() + "/0" }

// Start starts it (again) and waits until it answers PING.
func (r *RedisServer) Start() {
	r.t.Helper()
	args := append([]string{"--port", fmt.Sprint(r.Port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", r.Dir}, r.args...)
	r.cmd = exec.Command(r.bin, args...)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	c := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on %s did not answer within 10s", r.Addr())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop kills it (SIGKILL) and waits for it to exit.
func (r *RedisServer) Stop() {
	if r.cmd != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		r.cmd = nil
	}
}

// Restart is Stop and Start.
func (r *RedisServer) Restart() { r.Stop(); r.Start() }
