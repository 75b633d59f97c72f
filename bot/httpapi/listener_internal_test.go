package httpapi

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// dialAccepted is a client connection to l and the server's end of it.
func dialAccepted(t *testing.T, l *Listener) (net.Conn, *keptConn) {
	t.Helper()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	kc, ok := c.(*keptConn)
	if !ok {
		t.Fatalf("Accept returned a %T, want *keptConn", c)
	}
	t.Cleanup(func() { kc.Close() })
	return client, kc
}

func newTestListener(t *testing.T) *Listener {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(inner)
	t.Cleanup(func() { l.Close() })
	return l
}

// A connection given back is accepted again, and reads first what the
// server had buffered from it, then what the client sends next.
func TestListenerAcceptsGivenBackConn(t *testing.T) {
	l := newTestListener(t)
	client, kc := dialAccepted(t, l)
	kc.pending = []byte("GET /a")
	if !l.giveBack(kc) {
		t.Fatal("giveBack on an open listener = false")
	}
	c, err := l.Accept()
	if err != nil || c != kc {
		t.Fatalf("Accept after giveBack = %v, %v; want the connection given back", c, err)
	}
	client.Write([]byte(" HTTP/1.1"))
	kc.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(io.LimitReader(bufio.NewReader(kc), int64(len("GET /a HTTP/1.1"))))
	if err != nil || string(got) != "GET /a HTTP/1.1" {
		t.Errorf("read %q, %v; want the buffered bytes then the client's", got, err)
	}
	if n := l.IdleConns(); n != 0 {
		t.Errorf("%d idle after a request was read on the connection given back, want 0", n)
	}
}

// Close closes connections given back and not yet accepted (none is
// left open for the client to wait on), refuses later ones, and Accept
// then says the listener is closed.
func TestListenerCloseClosesQueuedConns(t *testing.T) {
	l := newTestListener(t)
	client, kc := dialAccepted(t, l)
	client2, kc2 := dialAccepted(t, l)
	if !l.giveBack(kc) {
		t.Fatal("giveBack on an open listener = false")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := client.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("client of a queued connection after Close: read %v, want EOF", err)
	}
	if l.giveBack(kc2) {
		t.Error("giveBack after Close = true, want false (the caller closes it)")
	}
	kc2.Close()
	client2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := client2.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("client of a connection refused after Close: read %v, want EOF", err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close = %v, want net.ErrClosed", err)
	}
	if n := l.IdleConns(); n != 0 {
		t.Errorf("%d connections held after Close, want 0", n)
	}
}
