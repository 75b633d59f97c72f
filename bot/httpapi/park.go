package httpapi

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/tokens"
)

// Parker is what a gateway offers for long-polls that hold no goroutine:
// bot.Gateway's WaitFunc and WaitHeldFunc.
type Parker interface {
	WaitFunc(ctx context.Context, id string, d time.Duration, seen int, done func(*bot.Request, error)) (*bot.Request, *bot.Waiter, error)
	WaitHeldFunc(ctx context.Context, id string, d time.Duration, seen int, done func(*bot.Request, error)) (*bot.Request, *bot.Waiter, error)
}

// parkWriteTimeout bounds writing a parked long-poll's answer.
const parkWriteTimeout = 10 * time.Second

// park answers GET /v1/requests/{id}?wait=d without keeping a goroutine
// (and net/http's buffers) per waiting client: the connection is hijacked
// and parked with the gateway's waiter, its peer's hang-up watched by one
// epoll set (conn_watch_linux.go), and the answer written on it when the
// request changes or d passes. The connection is then closed or, if it
// came from a Listener (listener.go), given back to the server for the
// client's next request. It returns false, having
// written nothing, where it cannot do that (no Parker, HTTP/2, no
// hang-up watch on this OS): the caller then waits the ordinary way.
func (s *Server) park(w http.ResponseWriter, r *http.Request, id string, d time.Duration, seen int) bool {
	pk, ok := s.Gateway.(Parker)
	if !ok || r.ProtoMajor != 1 || !canHijack(w) || !connWatchAvailable() {
		return false
	}
	p := &parkedWait{s: s, id: id, tok: TokenFrom(r.Context())}
	waitFunc := pk.WaitFunc
	if held(r) {
		waitFunc = pk.WaitHeldFunc
	}
	req, wt, err := waitFunc(r.Context(), id, d, seen, p.done)
	if wt == nil {
		s.answerGet(w, r, req, err)
		return true
	}
	p.w = wt
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not parked after all: answer from here.
		if wt.Stop() {
			req, err = s.wait(r, id, d, seen)
		} else {
			req, err = p.await()
		}
		s.answerGet(w, r, req, err)
		return true
	}
	conn.SetDeadline(time.Time{}) // the server's read and write deadlines no longer apply
	if kc, ok := conn.(*keptConn); ok && reusable(r) {
		p.keep = true
		if n := rw.Reader.Buffered(); n > 0 {
			// The client sent more (a pipelined request): served first
			// when the connection is given back, before anything left
			// of an earlier give-back.
			b, _ := rw.Reader.Peek(n)
			kc.pending = append(append([]byte(nil), b...), kc.pending...)
		}
	}
	watch, ok := watchConn(conn, func() { p.gone(conn) })
	if !ok { // cannot watch for the hang-up: wait on this goroutine
		req, err := p.await()
		p.reply(conn, 0, req, err)
		return true
	}
	p.mu.Lock()
	p.conn, p.watch = conn, watch
	answered, req, err := p.answered, p.req, p.err
	p.mu.Unlock()
	if answered {
		p.reply(conn, watch, req, err)
	}
	return true
}

// parkedWait is one parked long-poll: what its answer needs, no more.
type parkedWait struct {
	s   *Server
	id  string
	tok *tokens.Token
	w   *bot.Waiter

	mu       sync.Mutex
	conn     net.Conn // once hijacked and watched
	watch    uint64
	answered bool // done came before the conn was parked
	keep     bool // the conn can be given back after the answer
	req      *bot.Request
	err      error
	ready    chan struct{} // made by await
}

func (p *parkedWait) done(req *bot.Request, err error) {
	p.mu.Lock()
	if p.conn == nil {
		p.answered, p.req, p.err = true, req, err
		if p.ready != nil {
			close(p.ready)
		}
		p.mu.Unlock()
		return
	}
	conn, watch := p.conn, p.watch
	p.mu.Unlock()
	p.reply(conn, watch, req, err)
}

// await blocks for done's answer (only where parking failed midway).
func (p *parkedWait) await() (*bot.Request, error) {
	p.mu.Lock()
	if !p.answered {
		p.ready = make(chan struct{})
		ready := p.ready
		p.mu.Unlock()
		<-ready
		p.mu.Lock()
	}
	defer p.mu.Unlock()
	return p.req, p.err
}

// gone: the client hung up before its answer; if that stopped the wait
// (no answer is coming) its connection is closed here.
func (p *parkedWait) gone(conn net.Conn) {
	if p.w.Gone() {
		conn.Close()
	}
}

// reusable reports whether a parked long-poll's connection may serve
// another request after the answer: HTTP/1.1, no Connection: close, no
// body (unread bytes of one would be read as the next request).
func reusable(r *http.Request) bool {
	return r.ProtoAtLeast(1, 1) && !r.Close && r.ContentLength == 0 && len(r.TransferEncoding) == 0
}

// reply writes the answer GET would have written, then gives the
// connection back to its Listener (unwatched: its hang-up is the
// server's to see again) or, where it cannot, closes it.
func (p *parkedWait) reply(conn net.Conn, watch uint64, req *bot.Request, err error) {
	if watch != 0 {
		unwatchConn(conn, watch)
	}
	ctx := context.Background()
	if p.tok != nil {
		ctx = context.WithValue(ctx, tokenKey{}, p.tok)
	}
	r := (&http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/v1/requests/" + p.id}}).WithContext(ctx)
	var aw answerWriter
	p.s.answerGet(&aw, r, req, err)
	kc, _ := conn.(*keptConn)
	keep := p.keep && kc != nil && !kc.l.closing()
	conn.SetWriteDeadline(time.Now().Add(parkWriteTimeout))
	if _, err := conn.Write(aw.response(keep)); err != nil || !keep {
		conn.Close()
		return
	}
	// No deadline of ours is left on it: the server sets a read deadline
	// for each request, a write deadline only with a WriteTimeout.
	conn.SetDeadline(time.Time{})
	if !kc.l.giveBack(kc) {
		conn.Close()
	}
}

// answerWriter holds a response to write on a parked connection.
type answerWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

// response is the whole HTTP/1.1 response, status line to body, so that
// it goes out in one write: http.Response.Write on the bare connection
// made a write (a syscall) of each header line. Unless keep, it says
// Connection: close.
func (a *answerWriter) response(keep bool) []byte {
	a.WriteHeader(http.StatusOK)
	h := a.Header()
	for _, k := range []string{"Content-Length", "Transfer-Encoding", "Connection"} {
		h.Del(k) // written here
	}
	var b bytes.Buffer
	b.Grow(256 + a.body.Len())
	b.WriteString("HTTP/1.1 ")
	b.WriteString(strconv.Itoa(a.status))
	b.WriteByte(' ')
	if text := http.StatusText(a.status); text != "" {
		b.WriteString(text)
	} else {
		b.WriteString("status code " + strconv.Itoa(a.status))
	}
	b.WriteString("\r\n")
	_ = h.Write(&b)
	b.WriteString("Content-Length: " + strconv.Itoa(a.body.Len()) + "\r\n")
	if !keep {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	b.Write(a.body.Bytes())
	return b.Bytes()
}

func (a *answerWriter) Header() http.Header {
	if a.header == nil {
		a.header = http.Header{}
	}
	return a.header
}

func (a *answerWriter) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}

func (a *answerWriter) Write(b []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return a.body.Write(b)
}

// canHijack reports whether w (or what it wraps) can be hijacked, without
// hijacking it.
func canHijack(w http.ResponseWriter) bool {
	for {
		switch t := w.(type) {
		case http.Hijacker:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return false
		}
	}
}
