package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
)

// The gateway parks long-polls: without this the handler would quietly
// hold a goroutine per waiter again.
var _ httpapi.Parker = (*bot.Gateway)(nil)

// longPoll opens a raw connection and sends GET ?wait=d for id.
func longPoll(t *testing.T, addr, id, extra string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /v1/requests/%s?wait=30s%s HTTP/1.1\r\nHost: %s\r\n\r\n", id, extra, addr)
	return c
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 20s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readApproved reads the answer on a raw long-poll connection c; it must
// be 200 with the request approved.
func readApproved(t *testing.T, c net.Conn, what string) *http.Response {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"approved"`) {
		t.Fatalf("%s answered %d %.100s, want 200 approved", what, resp.StatusCode, body)
	}
	return resp
}

// connServing counts goroutines serving an HTTP connection.
func connServing() int {
	buf := make([]byte, 1<<22)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "net/http.(*conn).serve(")
}

// A waiting client costs the gateway no goroutine of its own (its
// connection is parked), and each is answered with the decision.
func TestLongPollsParkWithoutAGoroutineEach(t *testing.T) {
	f := setup(t)
	addr := strings.TrimPrefix(f.srv.URL, "http://")
	const n = 100
	reqs := make([]*bot.Request, n)
	for i := range reqs {
		reqs[i] = f.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
	}
	conns := make([]net.Conn, n)
	for i, r := range reqs {
		conns[i] = longPoll(t, addr, r.ID, "")
	}
	waitFor(t, fmt.Sprintf("%d waiting", n), func() bool { return f.env.Gateway.Waiting() == n })
	// Handlers that park return (slowly under -race); with a goroutine
	// per waiter, n of them would stay in net/http's conn.serve.
	deadline := time.Now().Add(20 * time.Second)
	for serving := connServing(); serving > 0; serving = connServing() {
		if time.Now().After(deadline) {
			t.Fatalf("%d long-polls hold %d net/http connection goroutines, want none", n, serving)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, r := range reqs {
		f.env.React(t, f.alice, r, "✅")
	}
	for i, c := range conns {
		readApproved(t, c, fmt.Sprint("long-poll ", i))
	}
	if w := f.env.Gateway.Waiting(); w != 0 {
		t.Fatalf("%d still waiting after every answer", w)
	}
}

// The requester's client hangs up while its parked long-poll waits: the
// request is withdrawn, as when its handler's context ended.
func TestParkedRequesterHangingUpWithdraws(t *testing.T) {
	f := setup(t)
	f.env.Gateway.WithdrawGrace = 100 * time.Millisecond
	addr := strings.TrimPrefix(f.srv.URL, "http://")
	r := f.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
	c := longPoll(t, addr, r.ID, "&withdraw_on_disconnect=true")
	waitFor(t, "waiting", func() bool { return f.env.Gateway.Waiting() == 1 })
	c.Close()
	waitFor(t, "withdrawn", func() bool {
		got, err := f.env.Gateway.Get(context.Background(), r.ID)
		return err == nil && got.Status == bot.Withdrawn
	})
	if w := f.env.Gateway.Waiting(); w != 0 {
		t.Fatalf("%d still waiting after the hang-up", w)
	}
}

// A plain long-poll that hangs up leaves no waiter behind and withdraws
// nothing.
func TestParkedWatcherHangingUpLeavesNothing(t *testing.T) {
	f := setup(t)
	f.env.Gateway.WithdrawGrace = 100 * time.Millisecond
	addr := strings.TrimPrefix(f.srv.URL, "http://")
	r := f.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
	c := longPoll(t, addr, r.ID, "")
	waitFor(t, "waiting", func() bool { return f.env.Gateway.Waiting() == 1 })
	c.Close()
	waitFor(t, "no waiter", func() bool { return f.env.Gateway.Waiting() == 0 })
	time.Sleep(300 * time.Millisecond)
	if got, err := f.env.Gateway.Get(context.Background(), r.ID); err != nil || got.Status != bot.Pending {
		t.Fatalf("after a watcher hung up: %v, %v; want it still pending", got, err)
	}
}

// countingListener counts the writes made on the TCP connections it
// accepts (still watchable for hang-ups: SyscallConn is *net.TCPConn's).
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		return &countedConn{tc, &l.writes}, nil
	}
	return c, err
}

type countedConn struct {
	*net.TCPConn
	writes *atomic.Int64
}

func (c *countedConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.TCPConn.Write(b)
}

// serveAPI serves the API on f's gateway with a real http.Server on ln.
func serveAPI(t *testing.T, f *fixture, ln net.Listener) *http.Server {
	t.Helper()
	srv := &http.Server{Handler: (&httpapi.Server{Gateway: f.env.Gateway, Ready: f.env.Store.Ping}).Handler()}
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-served })
	return srv
}

// A parked long-poll's answer goes out in one write, not a write (a
// syscall) per header line.
func TestParkedAnswerIsOneWrite(t *testing.T) {
	f := setup(t)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: inner}
	serveAPI(t, f, ln)
	r := f.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
	c := longPoll(t, inner.Addr().String(), r.ID, "")
	waitFor(t, "waiting", func() bool { return f.env.Gateway.Waiting() == 1 })
	f.env.React(t, f.alice, r, "✅")
	readApproved(t, c, "long-poll")
	if n := ln.writes.Load(); n != 1 {
		t.Errorf("the parked answer took %d writes, want 1", n)
	}
}
