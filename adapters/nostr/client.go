package nostr

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	gonostr "github.com/nbd-wtf/go-nostr"
)

// relayConn is one websocket to a relay speaking NIP-01: gobwas/ws framing
// (the library go-nostr itself uses) and go-nostr's envelopes, filters and
// events.
//
// go-nostr v0.38.2's own Relay is not used for the adapter's connections:
// every close of one — including the relay dropping it, which the adapter
// must survive routinely — is a data race inside go-nostr (Relay.Close
// reads r.Connection while its cleanup goroutine sets it to nil), its
// Publish reports success when the connection drops before the OK, and it
// hands events over re-parsed, not as the relay sent them. Here the raw
// event goes to signing.ParseReaction as received.
type relayConn struct {
	url  string
	nc   net.Conn
	h    relayHandlers
	wmu  sync.Mutex
	done chan struct{} // closed when the read loop ends
	err  error         // why; set before done is closed
	once sync.Once

	mu   sync.Mutex
	oks  map[string][]chan okReply
	subN atomic.Int64
}

type relayHandlers struct {
	event  func(subID string, raw json.RawMessage) // called on the read loop
	closed func(subID, reason string)
	notice func(msg string)
}

type okReply struct {
	ok     bool
	reason string
}

// Keepalive: a ping every pingEvery; a connection silent for idleTimeout
// (no data, no pong) is dead.
const (
	pingEvery   = 30 * time.Second
	idleTimeout = 75 * time.Second
)

// dialRelay connects to url; the connection lives until Close or until the
// relay drops it (Done).
func dialRelay(ctx context.Context, url string, h relayHandlers) (*relayConn, error) {
	nc, br, _, err := ws.Dialer{}.Dial(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	c := &relayConn{url: url, nc: nc, h: h, done: make(chan struct{}), oks: map[string][]chan okReply{}}
	var src io.Reader = bufio.NewReader(deadlineReader{nc})
	if br != nil && br.Buffered() > 0 { // frames that came with the handshake
		src = io.MultiReader(io.LimitReader(br, int64(br.Buffered())), src)
	}
	go c.readLoop(src)
	go c.pingLoop()
	return c, nil
}

// deadlineReader pushes the read deadline forward on every read, so only
// a silent connection times out.
type deadlineReader struct{ nc net.Conn }

func (d deadlineReader) Read(p []byte) (int, error) {
	d.nc.SetReadDeadline(time.Now().Add(idleTimeout))
	return d.nc.Read(p)
}

// lockedWriter lets the frame reader answer pings and closes without
// interleaving with our own frames (each control frame is one Write).
type lockedWriter struct{ c *relayConn }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.c.wmu.Lock()
	defer w.c.wmu.Unlock()
	return w.c.nc.Write(p)
}

func (c *relayConn) readLoop(src io.Reader) {
	rw := struct {
		io.Reader
		io.Writer
	}{src, lockedWriter{c}}
	var err error
	for {
		var msg []byte
		msg, err = readRelayMessage(rw)
		if err != nil {
			break
		}
		c.dispatch(msg)
	}
	c.err = err
	c.nc.Close()
	c.mu.Lock()
	c.oks = nil // publishers see done
	c.mu.Unlock()
	close(c.done)
}

// maxRelayMessage caps one message from a relay: events are small, and a
// relay is not trusted not to send gigabytes.
const maxRelayMessage = 1 << 20

// readRelayMessage is wsutil.ReadServerData with a cap on the message
// size; control frames (ping, close) are answered on the way.
func readRelayMessage(rw io.ReadWriter) ([]byte, error) {
	control := wsutil.ControlFrameHandler(rw, ws.StateClientSide)
	rd := wsutil.Reader{Source: rw, State: ws.StateClientSide, CheckUTF8: true,
		MaxMessageSize: maxRelayMessage, OnIntermediate: control}
	for {
		hdr, err := rd.NextFrame()
		if err != nil {
			return nil, err
		}
		if hdr.OpCode.IsControl() {
			if err := control(hdr, &rd); err != nil {
				return nil, err
			}
			continue
		}
		if hdr.OpCode&(ws.OpText|ws.OpBinary) == 0 {
			if err := rd.Discard(); err != nil {
				return nil, err
			}
			continue
		}
		return io.ReadAll(io.LimitReader(&rd, maxRelayMessage))
	}
}

func (c *relayConn) dispatch(msg []byte) {
	var arr []json.RawMessage
	if json.Unmarshal(msg, &arr) != nil || len(arr) < 2 {
		return
	}
	var typ, s1 string
	if json.Unmarshal(arr[0], &typ) != nil {
		return
	}
	json.Unmarshal(arr[1], &s1)
	switch {
	case typ == "EVENT" && len(arr) == 3:
		if c.h.event != nil {
			c.h.event(s1, arr[2])
		}
	case typ == "OK" && len(arr) >= 3:
		var r okReply
		json.Unmarshal(arr[2], &r.ok)
		if len(arr) >= 4 {
			json.Unmarshal(arr[3], &r.reason)
		}
		c.mu.Lock()
		waiters := c.oks[s1]
		delete(c.oks, s1)
		c.mu.Unlock()
		for _, w := range waiters {
			w <- r
		}
	case typ == "CLOSED":
		var reason string
		if len(arr) >= 3 {
			json.Unmarshal(arr[2], &reason)
		}
		if c.h.closed != nil {
			c.h.closed(s1, reason)
		}
	case typ == "NOTICE":
		if c.h.notice != nil {
			c.h.notice(s1)
		}
	}
}

func (c *relayConn) pingLoop() {
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			c.wmu.Lock()
			c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
			err := wsutil.WriteClientMessage(c.nc, ws.OpPing, nil)
			c.wmu.Unlock()
			if err != nil {
				c.nc.Close()
				return
			}
		}
	}
}

func (c *relayConn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := wsutil.WriteClientMessage(c.nc, ws.OpText, b); err != nil {
		c.nc.Close()
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// Done is closed when the connection has ended.
func (c *relayConn) Done() <-chan struct{} { return c.done }

// Err says why the connection ended.
func (c *relayConn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

func (c *relayConn) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// Close ends the connection and waits for its read loop.
func (c *relayConn) Close() {
	c.once.Do(func() { c.nc.Close() })
	<-c.done
}

// Publish sends ev and waits for the relay's OK; OK false is a *refusal.
func (c *relayConn) Publish(ctx context.Context, ev gonostr.Event) error {
	ch := make(chan okReply, 1)
	c.mu.Lock()
	if c.oks == nil {
		c.mu.Unlock()
		return errors.New("connection closed")
	}
	c.oks[ev.ID] = append(c.oks[ev.ID], ch)
	c.mu.Unlock()
	b, err := (&gonostr.EventEnvelope{Event: ev}).MarshalJSON()
	if err == nil {
		err = c.write(b)
	}
	if err != nil {
		return err
	}
	select {
	case r := <-ch:
		if !r.ok {
			return &refusal{reason: r.reason}
		}
		return nil
	case <-c.done:
		return fmt.Errorf("connection closed before the relay answered: %v", c.err)
	case <-ctx.Done():
		return fmt.Errorf("no OK from the relay: %w", context.Cause(ctx))
	}
}

// Req opens a subscription and returns its id.
func (c *relayConn) Req(fs gonostr.Filters) (string, error) {
	id := "signoff-" + strconv.FormatInt(c.subN.Add(1), 10)
	b, err := gonostr.ReqEnvelope{SubscriptionID: id, Filters: fs}.MarshalJSON()
	if err != nil {
		return "", err
	}
	return id, c.write(b)
}

// CloseSub ends a subscription.
func (c *relayConn) CloseSub(id string) error {
	env := gonostr.CloseEnvelope(id)
	b, err := env.MarshalJSON()
	if err != nil {
		return err
	}
	return c.write(b)
}

// refusal is a relay's OK false.
type refusal struct{ reason string }

func (e *refusal) Error() string { return "refused: " + e.reason }

func isRefusal(err error) bool {
	var r *refusal
	return errors.As(err, &r)
}
