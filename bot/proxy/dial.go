package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
)

// dial connects to host:port at the addresses host resolves to now. A
// loopback (or unspecified) address is dialed only when host itself names
// the machine (localhost, 127.0.0.1, ::1): a policy entry for a public
// name never reaches a local service through DNS. The proxy's own
// address is never dialed.
func (p *Proxy) dial(ctx context.Context, host string, port int) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.DialTimeout)
	defer cancel()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lookup := p.Lookup
		if lookup == nil {
			lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		ips, err := lookup(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("cannot resolve %s: %v", host, unwrapDNS(err))
		}
		addrs = ips
	}
	local := namesThisMachine(host)
	var errs []string
	d := net.Dialer{}
	for _, a := range addrs {
		a = a.Unmap()
		ap := netip.AddrPortFrom(a, uint16(port))
		if (a.IsLoopback() || a.IsUnspecified()) && !local {
			errs = append(errs, ap.String()+" is on this machine, and the policy names "+host+", not a local host")
			continue
		}
		if self := p.self.Load(); self != nil && isSelf(ap, *self) {
			errs = append(errs, ap.String()+" is this proxy")
			continue
		}
		c, err := d.DialContext(ctx, "tcp", ap.String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err.Error())
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	return nil, errors.New("cannot connect to " + host + ": " + strings.Join(errs, "; "))
}

func namesThisMachine(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && (a.Unmap().IsLoopback())
}

func isSelf(ap, self netip.AddrPort) bool {
	if ap.Port() != self.Port() {
		return false
	}
	s := self.Addr().Unmap()
	return ap.Addr() == s || s.IsUnspecified() && (ap.Addr().IsLoopback() || ap.Addr().IsUnspecified())
}

func unwrapDNS(err error) error {
	var de *net.DNSError
	if errors.As(err, &de) {
		return errors.New(de.Err)
	}
	return err
}

// limitListener accepts at most n connections at once.
func limitListener(ln net.Listener, n int) net.Listener {
	return &limited{Listener: ln, sem: make(chan struct{}, n)}
}

type limited struct {
	net.Listener
	sem chan struct{}
}

func (l *limited) Accept() (net.Conn, error) {
	l.sem <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes when the connection supports it.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}
