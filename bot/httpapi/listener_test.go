package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
)

// acceptCounter counts the connections its listener accepts, handing
// them on as they are (*net.TCPConn).
type acceptCounter struct {
	net.Listener
	n atomic.Int64
}

func (l *acceptCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// keepServer serves the API on f's gateway with a real http.Server on an
// httpapi.Listener, as serve does; Serve's error arrives on served.
type keepServer struct {
	srv    *http.Server
	ln     *httpapi.Listener
	tcp    *acceptCounter
	addr   string
	served chan error
}

func serveKept(t *testing.T, f *fixture) *keepServer {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k := &keepServer{tcp: &acceptCounter{Listener: inner}, addr: inner.Addr().String(), served: make(chan error, 1)}
	k.ln = httpapi.NewListener(k.tcp)
	k.srv = &http.Server{Handler: (&httpapi.Server{Gateway: f.env.Gateway, Ready: f.env.Store.Ping}).Handler()}
	go func() { k.served <- k.srv.Serve(k.ln) }()
	t.Cleanup(func() { k.srv.Close() })
	return k
}

// pollResult is one GET through a net/http client.
type pollResult struct {
	status int
	body   string
	reused bool // on a connection the client had used before
	close  bool // the answer said Connection: close
}

func (p pollResult) String() string {
	return fmt.Sprintf("%d %.100s… (reused %v, close %v)", p.status, p.body, p.reused, p.close)
}

func pollVia(t *testing.T, c *http.Client, url, host string) pollResult {
	t.Helper()
	var got pollResult
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { got.reused = i.Reused },
	})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got.status, got.body, got.close = resp.StatusCode, string(b), resp.Close
	return got
}

// An agent's client long-polls, is answered, and polls again: the second
// poll (parked too) goes on the same connection, and so does a call after
// it, which the Host check still sees.
func TestParkedLongPollKeepsItsConnection(t *testing.T) {
	f := setup(t)
	k := serveKept(t, f)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	r := f.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
	base := "http://" + k.addr + "/v1/requests/" + r.ID

	first := pollVia(t, c, base+"?wait=100ms", "") // parked, answered by its timer
	if first.status != http.StatusOK || !strings.Contains(first.body, `"status":"pending"`) || first.close {
		t.Fatalf("first long-poll = %v, want 200 pending without Connection: close", first)
	}
	second := make(chan pollResult, 1)
	go func() { second <- pollVia(t, c, base+"?wait=30s", "") }()
	waitFor(t, "the second poll parked", func() bool { return f.env.Gateway.Waiting() == 1 })
	f.env.React(t, f.alice, r, "✅")
	got := <-second
	if got.status != http.StatusOK || !strings.Contains(got.body, `"status":"approved"`) {
		t.Fatalf("second long-poll = %v, want 200 approved", got)
	}
	if !got.reused {
		t.Errorf("the second long-poll dialled a new connection, want the first one again")
	}
	refused := pollVia(t, c, base, "attacker.example")
	if refused.status != http.StatusMisdirectedRequest || !refused.reused {
		t.Errorf("a call with Host attacker.example after the long-polls = %d (reused %v), want 421 on the same connection", refused.status, refused.reused)
	}
	if n := k.tcp.n.Load(); n != 1 {
		t.Errorf("the server accepted %d TCP connections for three calls in a row, want 1", n)
	}
}

// A client that pipelines its next request behind a long-poll: the bytes
// net/http had read past the long-poll when it was parked are not lost,
// and that next request (a long-poll too) parks and is answered.
func TestGivenBackConnServesPipelinedRequest(t *testing.T) {
	f := setup(t)
	k := serveKept(t, f)
	r := f.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
	c, err := net.Dial("tcp", k.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /v1/requests/%[1]s?wait=200ms HTTP/1.1\r\nHost: %[2]s\r\n\r\n"+
		"GET /v1/requests/%[1]s?wait=30s HTTP/1.1\r\nHost: %[2]s\r\nConnection: close\r\n\r\n", r.ID, k.addr)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"pending"`) || resp.Close {
		t.Fatalf("first long-poll = %d %.100s (close %v), want 200 pending, kept open", resp.StatusCode, body, resp.Close)
	}
	waitFor(t, "the pipelined poll parked", func() bool { return f.env.Gateway.Waiting() == 1 })
	f.env.React(t, f.alice, r, "✅")
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the pipelined long-poll: %v", err)
	}
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"approved"`) || !resp.Close {
		t.Fatalf("pipelined long-poll = %d %.100s (close %v), want 200 approved and Connection: close as asked", resp.StatusCode, body, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after an answer with Connection: close, read %v, want EOF", err)
	}
}

// longPollAnswered sends a long-poll of d on c and reads its answer,
// which must keep the connection open.
func longPollAnswered(t *testing.T, c net.Conn, br *bufio.Reader, addr, id, d string) {
	t.Helper()
	fmt.Fprintf(c, "GET /v1/requests/%s?wait=%s HTTP/1.1\r\nHost: %s\r\n\r\n", id, d, addr)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("long-poll answered %d (close %v), want 200 kept open", resp.StatusCode, resp.Close)
	}
}

// Shutdown with connections given back (the client idle on them, as a
// client's pool is between polls) closes them and returns at once, not
// after net/http's 5s for a new connection that sends nothing.
func TestShutdownClosesGivenBackConns(t *testing.T) {
	f := setup(t)
	k := serveKept(t, f)
	r := f.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
	var conns []net.Conn
	var readers []*bufio.Reader
	for range 3 {
		c, err := net.Dial("tcp", k.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		br := bufio.NewReader(c)
		longPollAnswered(t, c, br, k.addr, r.ID, "50ms")
		conns, readers = append(conns, c), append(readers, br)
	}
	waitFor(t, "given back", func() bool { return k.ln.IdleConns() == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := k.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with 3 connections given back: %v, want nil within 3s", err)
	}
	if err := <-k.served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
	}
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := readers[i].ReadByte(); err != io.EOF {
			t.Errorf("connection %d after Shutdown: read %v, want EOF", i, err)
		}
	}
	if n := k.ln.IdleConns(); n != 0 {
		t.Errorf("%d connections given back still held after Shutdown", n)
	}
}

// A client hangs up on a connection given back, and another parks again
// on its given-back connection then hangs up: nothing is left behind (no
// waiter, no connection held) and the server answers others as before.
func TestHangUpAfterGiveBack(t *testing.T) {
	f := setup(t)
	k := serveKept(t, f)
	r := f.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})

	idle, err := net.Dial("tcp", k.addr)
	if err != nil {
		t.Fatal(err)
	}
	longPollAnswered(t, idle, bufio.NewReader(idle), k.addr, r.ID, "50ms")
	waitFor(t, "given back", func() bool { return k.ln.IdleConns() == 1 })
	idle.Close()
	waitFor(t, "the idle one forgotten", func() bool { return k.ln.IdleConns() == 0 })

	again, err := net.Dial("tcp", k.addr)
	if err != nil {
		t.Fatal(err)
	}
	longPollAnswered(t, again, bufio.NewReader(again), k.addr, r.ID, "50ms")
	fmt.Fprintf(again, "GET /v1/requests/%s?wait=30s HTTP/1.1\r\nHost: %s\r\n\r\n", r.ID, k.addr)
	waitFor(t, "parked again", func() bool { return f.env.Gateway.Waiting() == 1 })
	again.Close() // its hang-up is watched again
	waitFor(t, "no waiter", func() bool { return f.env.Gateway.Waiting() == 0 })

	c := longPoll(t, k.addr, r.ID, "")
	waitFor(t, "a new poll parked", func() bool { return f.env.Gateway.Waiting() == 1 })
	f.env.React(t, f.alice, r, "✅")
	readApproved(t, c, "a later long-poll")
	if n := k.tcp.n.Load(); n != 3 {
		t.Errorf("the server accepted %d connections, want 3", n)
	}
}

// Where the connection cannot be given back — a server not on an
// httpapi.Listener, a client that asked for Connection: close, TLS, a
// server shutting down — the parked answer says Connection: close and
// the connection is closed, as before.
func TestParkedAnswerClosesWhereNotReusable(t *testing.T) {
	f := setup(t)
	r := f.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy"})
	api := (&httpapi.Server{Gateway: f.env.Gateway}).Handler()
	check := func(t *testing.T, c *http.Client, url string) {
		t.Helper()
		got := pollVia(t, c, url+"/v1/requests/"+r.ID+"?wait=50ms", "")
		if got.status != http.StatusOK || !got.close {
			t.Errorf("long-poll = %v, want 200 with Connection: close", got)
		}
	}
	t.Run("httptest server", func(t *testing.T) {
		srv := httptest.NewServer(api)
		defer srv.Close()
		check(t, srv.Client(), srv.URL)
	})
	t.Run("Connection: close asked", func(t *testing.T) {
		k := serveKept(t, f)
		check(t, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, "http://"+k.addr)
	})
	t.Run("TLS", func(t *testing.T) {
		srv := httptest.NewUnstartedServer(api)
		srv.Listener = httpapi.NewListener(srv.Listener)
		srv.StartTLS()
		defer srv.Close()
		check(t, srv.Client(), srv.URL) // HTTP/1.1 (no EnableHTTP2): parked

	})
	t.Run("shutting down", func(t *testing.T) { // last: decides r
		k := serveKept(t, f)
		conn := longPoll(t, k.addr, r.ID, "")
		waitFor(t, "parked", func() bool { return f.env.Gateway.Waiting() == 1 })
		if err := k.srv.Shutdown(context.Background()); err != nil { // the parked poll is not the server's any more
			t.Fatal(err)
		}
		f.env.React(t, f.alice, r, "✅")
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !resp.Close {
			t.Errorf("answer after Shutdown kept the connection open, want Connection: close")
		}
	})
}
