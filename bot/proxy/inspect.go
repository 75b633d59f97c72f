package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"

	"github.com/signoff/signoff/bot/netpolicy"
)

// inspect serves a CONNECT to a narrowed door: the proxy is the TLS
// server (a certificate for host minted by its CA), each request inside is
// checked against the door's methods and paths, and what passes is sent
// on over a new TLS connection that verifies the real certificate. A
// client that does not trust the CA fails its handshake: nothing passes.
// Plain HTTP sent through the tunnel (curl -p http://…) is checked the
// same way and sent on as plain HTTP.
func (p *Proxy) inspect(conn net.Conn, brw *bufio.ReadWriter, connect *http.Request, host string, port int, program string) {
	defer conn.Close()
	// brw.Reader holds what the client sent with the CONNECT (a TLS hello
	// sent eagerly) and reads on from conn.
	c := &prefixConn{Conn: conn, r: brw.Reader}
	h := &inspected{p: p, connect: connect, host: host, port: port, program: program}
	conn.SetReadDeadline(time.Now().Add(p.DialTimeout))
	first, err := brw.Reader.Peek(1)
	if err != nil {
		return
	}
	conn.SetReadDeadline(time.Time{})
	if first[0] != 0x16 { // not a TLS handshake: plain HTTP inside the tunnel (curl -p http://…)
		p.serveInspected(c, h)
		return
	}
	leaf, err := p.CA.Leaf(host)
	if err != nil {
		p.log().Error("cannot mint a certificate for an inspected door", "host", host, "err", err)
		return
	}
	tc := tls.Server(c, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			// The name the client asks for is the host the CONNECT named,
			// never another site behind the same door.
			if hello.ServerName != "" && !strings.EqualFold(hello.ServerName, host) {
				return nil, fmt.Errorf("the TLS server name %q is not the CONNECT host %q", hello.ServerName, host)
			}
			return leaf, nil
		},
	})
	tc.SetDeadline(time.Now().Add(p.DialTimeout))
	if err := tc.HandshakeContext(connect.Context()); err != nil {
		// Mostly a client that does not trust the CA (see docs/network.md).
		p.log().Info("TLS refused on an inspected door (does the client trust the proxy CA?)", "dest", netpolicy.JoinHostPort(host, port), "program", program, "err", err)
		return
	}
	tc.SetDeadline(time.Time{})
	p.serveInspected(tc, h)
}

// serveInspected serves the requests of one inspected tunnel on c.
func (p *Proxy) serveInspected(c net.Conn, h *inspected) {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       p.TunnelIdle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(p.log().Handler(), slog.LevelDebug),
	}
	ln := newOneConn(c)
	srv.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed || s == http.StateHijacked {
			ln.Close()
		}
	}
	srv.Serve(ln)
	ln.wait()
}

// inspected checks and forwards the requests of one inspected tunnel.
type inspected struct {
	p       *Proxy
	connect *http.Request // the CONNECT: its credentials and context
	host    string
	port    int
	program string
}

func (h *inspected) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := h.p
	dest := netpolicy.JoinHostPort(h.host, h.port)
	// The Host header names the door's host: another name would reach a
	// different site behind the same address.
	if rh, rp, err := netpolicy.SplitHostPort(r.Host, h.port); err != nil || !strings.EqualFold(rh, h.host) || rp != h.port {
		http.Error(w, "signoff proxy: the Host header "+clip(r.Host)+" is not the host this tunnel was opened to ("+dest+")\n", http.StatusBadRequest)
		return
	}
	if r.URL.IsAbs() || r.Method == http.MethodConnect {
		http.Error(w, "signoff proxy: inside an inspected tunnel, send requests for "+dest+" only\n", http.StatusBadRequest)
		return
	}
	wire, ok := checkedPath(w, r)
	if !ok {
		return
	}
	// The policy in force now, not at the CONNECT: a door closed since
	// closes the tunnel's next request.
	rev := p.policy(w)
	if rev == nil {
		return
	}
	pol, who, ok := p.policyFor(w, h.connect, rev)
	if !ok {
		return
	}
	if _, ok := pol.AllowsCall(h.host, h.port, h.program, r.Method, wire); !ok {
		p.refuse(w, r, rev, netpolicy.Dest{Host: h.host, Port: h.port, Program: h.program, Method: r.Method, Path: cleanPath(wire)}, who)
		return
	}
	// TLS from the client goes upstream over TLS; plain HTTP in a tunnel
	// (curl -p http://…) goes as plain HTTP, as it would without the proxy.
	scheme, transport, defaultPort := "https", p.tlsTransport(), 443
	if r.TLS == nil {
		scheme, transport, defaultPort = "http", p.transport(), 80
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = scheme, dest
			pr.Out.Host = dest
			if h.port == defaultPort {
				pr.Out.Host = h.host
			}
			for _, hd := range proxyHeaders {
				pr.Out.Header.Del(hd)
			}
		},
		Transport:  transport,
		BufferPool: poolBuffers{},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "signoff proxy: "+upstreamError(dest, err)+"\n", http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, r)
}

// upstreamError says why an upstream was not reached; a certificate that
// does not verify is named as such: nothing is passed through to it.
func upstreamError(dest string, err error) string {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verify):
		return "refused: the upstream certificate of " + dest + " is not valid (" + err.Error() + "); nothing was sent to it"
	}
	return "cannot reach " + dest + ": " + err.Error()
}

// tlsTransport carries inspected requests upstream over TLS that verifies
// the server's certificate: against UpstreamRoots, or the system's roots.
func (p *Proxy) tlsTransport() *http.Transport {
	p.tlsOnce.Do(func() {
		p.tlsT = &http.Transport{
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				host, port, err := netpolicy.SplitHostPort(addr, 0)
				if err != nil {
					return nil, err
				}
				return p.dial(ctx, host, port)
			},
			TLSClientConfig:        &tls.Config{RootCAs: p.UpstreamRoots, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout:    p.DialTimeout,
			ResponseHeaderTimeout:  time.Minute,
			MaxIdleConnsPerHost:    8,
			IdleConnTimeout:        90 * time.Second,
			MaxResponseHeaderBytes: 1 << 20,
		}
	})
	return p.tlsT
}

// prefixConn reads what was buffered before the connection itself.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// oneConn is a listener that hands out one connection, then waits until
// it is closed.
type oneConn struct {
	mu     sync.Mutex
	c      net.Conn
	closed chan struct{}
	once   sync.Once
}

func newOneConn(c net.Conn) *oneConn { return &oneConn{c: c, closed: make(chan struct{})} }

func (l *oneConn) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.c
	l.c = nil
	l.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConn) wait()          { <-l.closed }
func (l *oneConn) Addr() net.Addr { return dummyAddr{} }

type dummyAddr struct{}

func (dummyAddr) Network() string { return "tcp" }
func (dummyAddr) String() string  { return "inspected" }
