//go:build linux

package httpapi

import (
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// connWatch is one epoll set, on one goroutine, that notices parked
// connections whose peer hung up (EPOLLRDHUP, edge-triggered: nothing is
// read from them). Each registration carries a token rather than the fd,
// so an event for an fd since closed and reused finds nothing.
type connWatch struct {
	once sync.Once
	ep   int
	err  error
	mu   sync.Mutex
	next uint64
	m    map[uint64]func()
}

var conns connWatch

func connWatchAvailable() bool {
	conns.once.Do(conns.start)
	return conns.err == nil
}

func (c *connWatch) start() {
	c.ep, c.err = unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if c.err != nil {
		return
	}
	c.m = map[uint64]func(){}
	go c.loop() // for the process's life, like the runtime's own poller
}

func (c *connWatch) loop() {
	evs := make([]unix.EpollEvent, 256)
	for {
		n, err := unix.EpollWait(c.ep, evs, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return // parked connections are still answered; hang-ups go unnoticed
		}
		for _, ev := range evs[:n] {
			tok := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			c.mu.Lock()
			gone := c.m[tok]
			delete(c.m, tok)
			c.mu.Unlock()
			if gone != nil {
				gone()
			}
		}
	}
}

// watchConn calls gone (once, on the watch goroutine) when conn's peer
// hangs up; false if conn cannot be watched.
func watchConn(conn net.Conn, gone func()) (uint64, bool) {
	if !connWatchAvailable() {
		return 0, false
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	c := &conns
	c.mu.Lock()
	c.next++
	tok := c.next
	c.m[tok] = gone
	c.mu.Unlock()
	var cerr error
	err = raw.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(uint32(tok)), Pad: int32(uint32(tok >> 32))}
		cerr = unix.EpollCtl(c.ep, unix.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err != nil || cerr != nil {
		c.mu.Lock()
		delete(c.m, tok)
		c.mu.Unlock()
		return 0, false
	}
	return tok, true
}

// unwatchConn stops watching conn (before it is closed).
func unwatchConn(conn net.Conn, tok uint64) {
	c := &conns
	c.mu.Lock()
	delete(c.m, tok)
	c.mu.Unlock()
	if sc, ok := conn.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) { unix.EpollCtl(c.ep, unix.EPOLL_CTL_DEL, int(fd), nil) })
		}
	}
}
