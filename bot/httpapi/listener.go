package httpapi

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Listener is a net.Listener for the http.Server that serves the API.
// Its Accept returns, besides new connections, those of parked
// long-polls once answered (park.go), so the server reads the client's
// next request on the same connection as it would on a keep-alive one:
// an agent polls again after every change, and each new connection
// costs a connect, an accept and a close on both sides. Only plain TCP
// connections are given back; with any other listener (httptest, TLS)
// a parked answer closes its connection. To the server a connection
// given back is a new one: it waits for the next request as long as
// ReadHeaderTimeout (not IdleTimeout) allows.
type Listener struct {
	net.Listener

	accepted chan accepted // from the goroutine calling the inner Accept
	backc    chan struct{} // cap 1: back has something
	done     chan struct{} // closed by Close
	err      error         // why accepted was closed
	wg       sync.WaitGroup

	mu      sync.Mutex
	started bool
	closed  bool
	back    []*keptConn            // given back, not yet accepted
	idle    map[*keptConn]struct{} // given back, no request read on them yet
}

type accepted struct {
	c   net.Conn
	err error
}

// NewListener wraps ln (a TCP listener) for the API's http.Server.
func NewListener(ln net.Listener) *Listener {
	return &Listener{
		Listener: ln,
		accepted: make(chan accepted),
		backc:    make(chan struct{}, 1),
		done:     make(chan struct{}),
		idle:     map[*keptConn]struct{}{},
	}
}

// Accept returns a connection given back or a new one, whichever comes
// first.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		if !l.started && !l.closed {
			l.started = true
			l.wg.Add(1)
			go l.acceptLoop()
		}
		if len(l.back) > 0 {
			c := l.back[0]
			l.back[0] = nil
			l.back = l.back[1:]
			more := len(l.back) > 0
			l.mu.Unlock()
			if more { // for another Accept at the same time
				l.signal()
			}
			return c, nil
		}
		closed := l.closed
		l.mu.Unlock()
		if closed {
			return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: net.ErrClosed}
		}
		select {
		case a, ok := <-l.accepted:
			if !ok {
				return nil, l.err
			}
			return a.c, a.err
		case <-l.backc:
		case <-l.done:
		}
	}
}

// acceptLoop accepts new connections until the inner listener is closed.
// Errors are passed on for the server to judge (it retries temporary
// ones, at its own pace: this loop waits for each to be taken).
func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.Listener.Accept()
		if err != nil && errors.Is(err, net.ErrClosed) {
			l.err = err
			close(l.accepted)
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			c = &keptConn{TCPConn: tc, l: l}
		}
		select {
		case l.accepted <- accepted{c, err}:
		case <-l.done:
			if c != nil {
				c.Close()
			}
			return
		}
	}
}

// Close closes the listener and the connections given back to it on
// which no request has been read yet — as http.Server's Shutdown and
// Close do with idle keep-alive connections (to the server a connection
// given back is new, and Shutdown would leave it open 5s).
func (l *Listener) Close() error {
	err := l.Listener.Close()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return err
	}
	l.closed = true
	idle := l.idle
	l.idle, l.back = nil, nil
	l.mu.Unlock()
	close(l.done)
	for c := range idle {
		c.TCPConn.Close()
	}
	l.wg.Wait()
	return err
}

// giveBack queues c, a parked long-poll's connection whose answer is
// written, for Accept; false (c is the caller's to close) once the
// listener is closed.
func (l *Listener) giveBack(c *keptConn) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	c.idle.Store(true)
	l.idle[c] = struct{}{}
	l.back = append(l.back, c)
	l.mu.Unlock()
	l.signal()
	return true
}

func (l *Listener) signal() {
	select {
	case l.backc <- struct{}{}:
	default:
	}
}

// closing reports whether the listener is closed (the server shutting
// down): an answer then closes its connection.
func (l *Listener) closing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// busy: a request is being read on c, given back; false if the listener
// has closed c first.
func (l *Listener) busy(c *keptConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.idle[c]; !ok {
		return false
	}
	delete(l.idle, c)
	c.idle.Store(false)
	return true
}

// forget: c, given back, is closed by the server.
func (l *Listener) forget(c *keptConn) {
	l.mu.Lock()
	delete(l.idle, c)
	l.mu.Unlock()
}

// keptConn is a TCP connection accepted by a Listener, which park may
// give back to it. Its Read returns first the bytes the server had
// buffered from it before the hijack (a pipelined request).
type keptConn struct {
	*net.TCPConn
	l       *Listener
	pending []byte      // read by the server before the hijack, not yet served
	idle    atomic.Bool // given back and no request read since: Close of l closes it
}

func (c *keptConn) Read(b []byte) (n int, err error) {
	if len(c.pending) > 0 {
		n = copy(b, c.pending)
		c.pending = c.pending[n:]
		if len(c.pending) == 0 {
			c.pending = nil
		}
	} else {
		n, err = c.TCPConn.Read(b)
	}
	if n > 0 && c.idle.Load() && !c.l.busy(c) {
		return 0, net.ErrClosed
	}
	return n, err
}

// WriteTo reads through Read (*net.TCPConn's would skip pending).
func (c *keptConn) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, struct{ io.Reader }{c})
}

func (c *keptConn) Close() error {
	if c.idle.Load() {
		c.l.forget(c)
	}
	return c.TCPConn.Close()
}
