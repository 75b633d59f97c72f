package redis

import (
	"net"
	"sync"
)

// asyncConn lets writes to the embedded server's in-memory pipe complete
// without waiting for the server to read them. net.Pipe is synchronous:
// a client writing a long pipeline (a request whose action is a few KiB,
// in MULTI) while the server writes its reply to the first command would
// wait on each other for ever. Writes are queued and copied to the pipe
// by one goroutine, which ends when the connection is closed.
type asyncConn struct {
	net.Conn
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	closed bool
	err    error
}

func newAsyncConn(c net.Conn) *asyncConn {
	a := &asyncConn{Conn: c}
	a.cond = sync.NewCond(&a.mu)
	go a.flush()
	return a
}

func (a *asyncConn) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.err != nil:
		return 0, a.err
	case a.closed:
		return 0, net.ErrClosed
	}
	a.buf = append(a.buf, p...)
	a.cond.Signal()
	return len(p), nil
}

func (a *asyncConn) flush() {
	for {
		a.mu.Lock()
		for len(a.buf) == 0 && !a.closed {
			a.cond.Wait()
		}
		if a.closed {
			a.mu.Unlock()
			return
		}
		b := a.buf
		a.buf = nil
		a.mu.Unlock()
		if _, err := a.Conn.Write(b); err != nil {
			a.mu.Lock()
			a.err = err
			a.mu.Unlock()
			return
		}
	}
}

func (a *asyncConn) Close() error {
	a.mu.Lock()
	a.closed = true
	a.cond.Signal()
	a.mu.Unlock()
	return a.Conn.Close()
}
