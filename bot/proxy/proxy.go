package proxy

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	pathpkg "path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/netpolicy"
)

// Source is where the proxy learns the policy and files drafts: the
// gateway's API client, or the netpolicy.Service in process.
type Source interface {
	// WaitPolicy returns the current revision once it is newer than
	// after, or when d has passed.
	WaitPolicy(ctx context.Context, after int, d time.Duration) (netpolicy.Revision, error)
	FileDraft(ctx context.Context, persona string, d netpolicy.Dest) (*netpolicy.Draft, error)
}

// Proxy is the forward proxy. Set the fields, Run it to keep its policy
// current, and serve it with Serve.
type Proxy struct {
	Source  Source
	Persona string
	Logger  *slog.Logger
	// Identify names the program behind a client connection; nil: the
	// /proc lookup for loopback clients (Linux), else "".
	Identify func(client, server net.Addr) string
	// Lookup resolves a name (nil: net.DefaultResolver.LookupNetIP).
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)

	DialTimeout time.Duration // default 10s
	TunnelIdle  time.Duration // an idle tunnel is closed after this (default 5m)
	MaxConns    int           // clients served at once (default 512)
	PollWait    time.Duration // long-poll length (default 30s)

	// CheckToken looks up the token a client sends as proxy credentials
	// (Proxy-Authorization); its declared doors are opened for that
	// client only. Nil: a client with credentials gets 407.
	CheckToken TokenCheck
	TokenTTL   time.Duration // a token's record is re-checked after this (default DefaultTokenTTL)

	// CA mints the certificates of inspected doors (LoadCA). Nil: a
	// CONNECT to a door that narrows methods or paths is refused, since
	// it cannot be checked (never let through as a tunnel).
	CA *CA
	// UpstreamRoots verifies the certificates of inspected doors'
	// upstreams; nil: the system's roots.
	UpstreamRoots *x509.CertPool

	tokens tokenCache

	rev     atomic.Pointer[netpolicy.Revision]
	self    atomic.Pointer[netip.AddrPort]
	loaded  chan struct{}
	once    sync.Once
	tOnce   sync.Once
	t       *http.Transport
	tlsOnce sync.Once
	tlsT    *http.Transport
}

func (p *Proxy) log() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}

func (p *Proxy) init() {
	p.once.Do(func() {
		p.loaded = make(chan struct{})
		if p.DialTimeout <= 0 {
			p.DialTimeout = 10 * time.Second
		}
		if p.TunnelIdle <= 0 {
			p.TunnelIdle = 5 * time.Minute
		}
		if p.MaxConns <= 0 {
			p.MaxConns = 512
		}
		if p.PollWait <= 0 {
			p.PollWait = 30 * time.Second
		}
	})
}

// Revision returns the revision in force (nil before the first load).
func (p *Proxy) Revision() *netpolicy.Revision { return p.rev.Load() }

// Loaded is closed once a policy revision is in force.
func (p *Proxy) Loaded() <-chan struct{} {
	p.init()
	return p.loaded
}

// Run keeps the policy current until ctx ends: each new revision is in
// force as soon as the gateway answers the long poll.
func (p *Proxy) Run(ctx context.Context) error {
	p.init()
	backoff := 200 * time.Millisecond
	var first sync.Once
	for ctx.Err() == nil {
		after := -1
		if cur := p.rev.Load(); cur != nil {
			after = cur.N
		}
		rev, err := p.Source.WaitPolicy(ctx, after, p.PollWait)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			p.log().Warn("cannot load the network policy; keeping the one in force", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 200 * time.Millisecond
		if cur := p.rev.Load(); cur == nil || cur.N != rev.N {
			if err := rev.Policy.Check(); err != nil { // never trust what came over the wire
				p.log().Error("the gateway sent a policy that does not check; keeping the one in force", "n", rev.N, "err", err)
				continue
			}
			p.rev.Store(&rev)
			p.log().Info("network policy in force", "revision", rev.N, "entries", len(rev.Policy.Hosts))
			first.Do(func() { close(p.loaded) })
		}
	}
	return ctx.Err()
}

// Serve serves the proxy on ln until ctx ends, at most MaxConns clients
// at once.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	p.init()
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil {
		p.self.Store(&ap)
	}
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(p.log().Handler(), slog.LevelDebug),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, &clientConn{local: c.LocalAddr(), remote: c.RemoteAddr()})
		},
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	}()
	err := srv.Serve(limitListener(ln, p.MaxConns))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

type connKey struct{}

// clientConn remembers a client connection's addresses and, once asked,
// its program.
type clientConn struct {
	local, remote net.Addr
	once          sync.Once
	program       string
}

func (p *Proxy) program(r *http.Request) string {
	cc, _ := r.Context().Value(connKey{}).(*clientConn)
	if cc == nil {
		return ""
	}
	cc.once.Do(func() {
		id := p.Identify
		if id == nil {
			id = IdentifyLoopback
		}
		cc.program = id(cc.remote, cc.local)
	})
	return cc.program
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() {
		http.Error(w, "signoff proxy: this is a forward proxy; send absolute URLs (set HTTP_PROXY and HTTPS_PROXY to it)\n", http.StatusBadRequest)
		return
	}
	p.forward(w, r)
}

// policy returns the revision in force, or answers 503 itself.
func (p *Proxy) policy(w http.ResponseWriter) *netpolicy.Revision {
	rev := p.rev.Load()
	if rev == nil {
		http.Error(w, "signoff proxy: no network policy loaded yet (is the gateway up?); nothing is let through\n", http.StatusServiceUnavailable)
	}
	return rev
}

func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := netpolicy.SplitHostPort(r.Host, 0)
	if err != nil {
		http.Error(w, "signoff proxy: CONNECT "+clip(r.Host)+": "+err.Error()+"\n", http.StatusBadRequest)
		return
	}
	rev := p.policy(w)
	if rev == nil {
		return
	}
	pol, who, ok := p.policyFor(w, r, rev)
	if !ok {
		return
	}
	program := p.program(r)
	i, kind := pol.Tunnel(host, port, program)
	switch {
	case kind == netpolicy.TunnelRefused:
		p.refuse(w, r, rev, netpolicy.Dest{Host: host, Port: port, Program: program}, who)
		return
	case kind == netpolicy.TunnelInspected && p.CA == nil:
		p.log().Info("refused: a narrowed door needs inspection and this proxy has no CA", "dest", clip(r.Host), "program", program)
		http.Error(w, "signoff proxy: the door "+pol.Hosts[i].String()+" narrows methods or paths, so HTTPS to it is inspected, "+
			"and this proxy was started without its CA; nothing is let through (see docs/network.md)\n", http.StatusForbidden)
		return
	case kind == netpolicy.TunnelInspected:
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, "signoff proxy: cannot open a tunnel on this connection\n", http.StatusInternalServerError)
			return
		}
		if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
			conn.Close()
			return
		}
		p.inspect(conn, brw, r, host, port, program)
		return
	}
	up, err := p.dial(r.Context(), host, port)
	if err != nil {
		http.Error(w, "signoff proxy: "+err.Error()+"\n", http.StatusBadGateway)
		return
	}
	rc := http.NewResponseController(w)
	conn, brw, err := rc.Hijack()
	if err != nil {
		up.Close()
		http.Error(w, "signoff proxy: cannot open a tunnel on this connection\n", http.StatusInternalServerError)
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		conn.Close()
		up.Close()
		return
	}
	// Bytes the client sent after the CONNECT head (a TLS hello sent
	// eagerly) are already buffered.
	// A tunnel only the token's doors let through ends when the token does.
	if _, byPolicy := rev.Policy.AllowsTunnel(host, port, program); who != "" && !byPolicy {
		done := make(chan struct{})
		defer close(done)
		go p.watchToken(r, done, conn, up)
	}
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			conn.Close()
			up.Close()
			return
		}
	}
	p.splice(conn, up)
}

// splice copies both ways until either side ends or is idle too long.
func (p *Proxy) splice(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		bp := bufPool.Get().(*[]byte)
		defer bufPool.Put(bp)
		buf := *bp
		// Deadlines are pushed out at most once a second: a syscall per
		// read would halve the throughput.
		var last time.Time
		for {
			if now := time.Now(); now.Sub(last) > time.Second {
				last = now
				src.SetReadDeadline(now.Add(p.TunnelIdle))
				dst.SetWriteDeadline(now.Add(p.TunnelIdle))
			}
			n, err := src.Read(buf)
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		// Half-close so the other direction can finish; then both go.
		if tc, ok := dst.(interface{ CloseWrite() error }); ok {
			tc.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go cp(b, a)
	go cp(a, b)
	wg.Wait()
	a.Close()
	b.Close()
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// poolBuffers lends ReverseProxy its copy buffers.
type poolBuffers struct{}

func (poolBuffers) Get() []byte  { return *bufPool.Get().(*[]byte) }
func (poolBuffers) Put(b []byte) { bufPool.Put(&b) }

// hopHeaders are not forwarded (RFC 9110 7.6.1); ReverseProxy drops the
// standard ones, these are the proxy's own.
var proxyHeaders = []string{"Proxy-Authorization", "Proxy-Connection"}

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	if r.URL.Scheme != "http" {
		http.Error(w, "signoff proxy: only http:// is forwarded; HTTPS goes through CONNECT\n", http.StatusBadRequest)
		return
	}
	host, port, err := netpolicy.SplitHostPort(r.URL.Host, 80)
	if err != nil {
		http.Error(w, "signoff proxy: "+err.Error()+"\n", http.StatusBadRequest)
		return
	}
	wire, ok := checkedPath(w, r)
	if !ok {
		return
	}
	rev := p.policy(w)
	if rev == nil {
		return
	}
	pol, who, ok := p.policyFor(w, r, rev)
	if !ok {
		return
	}
	program := p.program(r)
	if _, ok := pol.AllowsCall(host, port, program, r.Method, wire); !ok {
		p.refuse(w, r, rev, netpolicy.Dest{Host: host, Port: port, Program: program, Method: r.Method, Path: cleanPath(wire)}, who)
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", netpolicy.JoinHostPort(host, port)
			// The Host header is the checked host, never another name
			// sent along to reach a different site behind the same address.
			pr.Out.Host = pr.Out.URL.Host
			if port == 80 {
				pr.Out.Host = host
			}
			for _, h := range proxyHeaders {
				pr.Out.Header.Del(h)
			}
		},
		Transport:  p.transport(),
		BufferPool: poolBuffers{},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "signoff proxy: "+err.Error()+"\n", http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, r)
}

// transport is shared by every forwarded call, so connections to an
// upstream are reused; it dials only the host:port that was checked (the
// rewritten URL's), through dial.
func (p *Proxy) transport() *http.Transport {
	p.tOnce.Do(func() {
		p.t = &http.Transport{
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				host, port, err := netpolicy.SplitHostPort(addr, 0)
				if err != nil {
					return nil, err
				}
				return p.dial(ctx, host, port)
			},
			ResponseHeaderTimeout:  time.Minute,
			MaxIdleConnsPerHost:    8,
			IdleConnTimeout:        90 * time.Second,
			MaxResponseHeaderBytes: 1 << 20,
		}
	})
	return p.t
}

// cleanPath makes a refused path something a request may name: no *,
// within the length limit.
func cleanPath(p string) string {
	p = strings.ReplaceAll(p, "*", "%2A")
	if len(p) > netpolicy.MaxPathLen {
		p = p[:netpolicy.MaxPathLen]
	}
	return p
}

// refuse answers 403, naming the draft it filed and how to ask.
// who is the extension the client's token belongs to ("" without one).
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, rev *netpolicy.Revision, d netpolicy.Dest, who string) {
	dest := netpolicy.JoinHostPort(d.Host, d.Port)
	what := dest
	if d.Method != "" {
		scheme := "http"
		if r.TLS != nil { // inside an inspected tunnel
			scheme = "https"
		}
		what = d.Method + " " + scheme + "://" + dest + d.Path
	}
	var b strings.Builder
	fmt.Fprintf(&b, "signoff proxy: %s is not allowed by network policy revision %d.\n", what, rev.N)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 3*time.Second)
	defer cancel()
	d.Extension = who
	draft, err := p.Source.FileDraft(ctx, p.Persona, d)
	switch {
	case err != nil:
		p.log().Warn("file draft", "dest", dest, "err", err)
		fmt.Fprintf(&b, "No draft could be filed: %s.\n", bot.ErrorMessage(err))
	case draft != nil:
		w.Header().Set("X-Signoff-Draft", draft.ID)
		fmt.Fprintf(&b, "Draft request %s filed (%s; refused %d time%s).\n", draft.ID, draft.Reason, draft.Count, plural(draft.Count))
	}
	ask := "signoff net request --host " + d.Host + " --port " + strconv.Itoa(d.Port)
	if d.Method != "" {
		ask += " --method " + d.Method + " --path '" + d.Path + "'"
	}
	fmt.Fprintf(&b, "To ask a person for it: %s --reason 'why the agent needs it' --wait\n", ask)
	p.log().Info("refused", "dest", dest, "method", d.Method, "path", d.Path, "program", d.Program, "extension", who, "revision", rev.N)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusForbidden)
	io.WriteString(w, b.String())
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// checkedPath is the request's path as policy paths are written (escaped;
// "/" for none), or false after refusing it: too long, or with a . or ..
// segment or doubled slashes — paths are checked as the server will read
// them, and such a segment (plain or %-encoded) could step out of an
// allowed /repos/*.
func checkedPath(w http.ResponseWriter, r *http.Request) (string, bool) {
	path := r.URL.Path
	if path == "" {
		path = "/"
	}
	wire := r.URL.EscapedPath()
	if wire == "" {
		wire = "/"
	}
	if len(wire) > netpolicy.MaxPathLen {
		http.Error(w, fmt.Sprintf("signoff proxy: path longer than %d bytes\n", netpolicy.MaxPathLen), http.StatusRequestURITooLong)
		return "", false
	}
	if c := pathpkg.Clean(path); c != path && c+"/" != path {
		http.Error(w, "signoff proxy: a path with . or .. segments or doubled slashes is refused\n", http.StatusBadRequest)
		return "", false
	}
	return wire, true
}
