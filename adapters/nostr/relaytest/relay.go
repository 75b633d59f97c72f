// Package relaytest is a small NIP-01 relay for tests: websocket (gobwas/ws)
// on loopback, EVENT with OK true/false after verifying id and signature,
// REQ with stored events, EOSE and live fan-out (go-nostr's Filters.Match),
// CLOSE, NOTICE for anything else, and NIP-09 deletions of an author's own
// events. Hooks let a test refuse events, push raw (forged) events to
// subscribers, stop and restart the relay on the same port, and count
// deliveries. It is a test helper, not part of the product.
package relaytest

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	gonostr "github.com/nbd-wtf/go-nostr"

	signoffnostr "github.com/signoff/signoff/adapters/nostr"
)

// Relay is a running (or stopped) test relay. Its stored events survive a
// Stop and Restart, as a real relay's database would.
type Relay struct {
	addr string

	mu        sync.Mutex
	ln        net.Listener
	srv       *http.Server
	serving   sync.WaitGroup
	conns     map[*conn]struct{}
	events    []gonostr.Event
	received  map[string]time.Time // first EVENT arrival, before checks
	delivered map[string]int       // EVENT messages sent to subscribers
	stored    map[string]int       // of which sent as stored events (before EOSE)
	reqs      int
	refuse    func(*gonostr.Event) string
}

type conn struct {
	c    net.Conn
	wmu  sync.Mutex
	subs map[string]gonostr.Filters // guarded by Relay.mu
}

// Start runs a relay on 127.0.0.1 on a free port and stops it when the test
// ends.
func Start(t testing.TB) *Relay {
	t.Helper()
	r := &Relay{
		conns: map[*conn]struct{}{}, received: map[string]time.Time{},
		delivered: map[string]int{}, stored: map[string]int{},
	}
	if err := r.listen("127.0.0.1:0"); err != nil {
		t.Fatalf("relaytest: %v", err)
	}
	r.addr = r.ln.Addr().String()
	t.Cleanup(r.Stop)
	return r
}

// URL is the relay's ws:// address.
func (r *Relay) URL() string { return "ws://" + r.addr }

func (r *Relay) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(r.serveHTTP), ReadHeaderTimeout: 5 * time.Second}
	r.mu.Lock()
	r.ln, r.srv = ln, srv
	r.mu.Unlock()
	r.serving.Add(1)
	go func() {
		defer r.serving.Done()
		srv.Serve(ln)
	}()
	return nil
}

// Stop closes the listener and every connection, as a crashed relay would.
func (r *Relay) Stop() {
	r.mu.Lock()
	srv := r.srv
	r.srv, r.ln = nil, nil
	conns := make([]*conn, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Close()
	for _, c := range conns {
		c.c.Close()
	}
	r.serving.Wait()
}

// Restart listens again on the same port, keeping the stored events.
func (r *Relay) Restart() error {
	r.mu.Lock()
	running := r.srv != nil
	r.mu.Unlock()
	if running {
		return errors.New("relaytest: already running")
	}
	return r.listen(r.addr)
}

// Refuse installs a hook: a non-empty reason refuses the event with OK false.
func (r *Relay) Refuse(fn func(*gonostr.Event) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refuse = fn
}

// Inject sends raw, unverified, to every subscription whose filters match
// it (as parsed), as a lying relay would. It returns how many got it.
func (r *Relay) Inject(raw []byte) int {
	var ev gonostr.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return 0
	}
	type target struct {
		c  *conn
		id string
	}
	var ts []target
	r.mu.Lock()
	for c := range r.conns {
		for id, f := range c.subs {
			if f.Match(&ev) {
				ts = append(ts, target{c, id})
			}
		}
	}
	r.mu.Unlock()
	for _, t := range ts {
		sid, _ := json.Marshal(t.id)
		t.c.write([]byte(`["EVENT",` + string(sid) + `,` + string(raw) + `]`))
	}
	return len(ts)
}

// CloseSubscriptions ends every open subscription with a CLOSED message
// carrying reason, as a relay enforcing limits or auth would.
func (r *Relay) CloseSubscriptions(reason string) int {
	type target struct {
		c  *conn
		id string
	}
	var ts []target
	r.mu.Lock()
	for c := range r.conns {
		for id := range c.subs {
			ts = append(ts, target{c, id})
			delete(c.subs, id)
		}
	}
	r.mu.Unlock()
	for _, t := range ts {
		b, _ := (&gonostr.ClosedEnvelope{SubscriptionID: t.id, Reason: reason}).MarshalJSON()
		t.c.write(b)
	}
	return len(ts)
}

// Events returns the stored events matching f.
func (r *Relay) Events(f gonostr.Filter) []gonostr.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []gonostr.Event
	for _, ev := range r.events {
		if f.Matches(&ev) {
			out = append(out, ev)
		}
	}
	return out
}

// ReceivedAt is when an EVENT with this id first reached the relay.
func (r *Relay) ReceivedAt(id string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.received[id]
	return t, ok
}

// Deliveries counts the EVENT messages carrying id sent to subscribers, and
// how many of them were stored events sent in answer to a REQ.
func (r *Relay) Deliveries(id string) (total, stored int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.delivered[id], r.stored[id]
}

// Listeners is how many open subscriptions ev would be sent to.
func (r *Relay) Listeners(ev *gonostr.Event) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for c := range r.conns {
		for _, f := range c.subs {
			if f.Match(ev) {
				n++
			}
		}
	}
	return n
}

// Subscriptions is the number of open subscriptions; Reqs counts every REQ
// ever received.
func (r *Relay) Subscriptions() (open, reqs int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.conns {
		open += len(c.subs)
	}
	return open, r.reqs
}

func (r *Relay) serveHTTP(w http.ResponseWriter, req *http.Request) {
	nc, _, _, err := ws.UpgradeHTTP(req, w)
	if err != nil {
		return
	}
	c := &conn{c: nc, subs: map[string]gonostr.Filters{}}
	r.mu.Lock()
	if r.srv == nil {
		r.mu.Unlock()
		nc.Close()
		return
	}
	r.conns[c] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.conns, c)
		r.mu.Unlock()
		nc.Close()
	}()
	for {
		msg, op, err := wsutil.ReadClientData(nc)
		if err != nil {
			return
		}
		if op != ws.OpText {
			continue
		}
		r.handle(c, msg)
	}
}

func (r *Relay) handle(c *conn, msg []byte) {
	switch env := gonostr.ParseMessage(msg).(type) {
	case *gonostr.EventEnvelope:
		r.event(c, &env.Event)
	case *gonostr.ReqEnvelope:
		r.req(c, env.SubscriptionID, env.Filters)
	case *gonostr.CloseEnvelope:
		r.mu.Lock()
		delete(c.subs, string(*env))
		r.mu.Unlock()
	default:
		n := gonostr.NoticeEnvelope("unsupported message")
		b, _ := n.MarshalJSON()
		c.write(b)
	}
}

func (r *Relay) event(c *conn, ev *gonostr.Event) {
	r.mu.Lock()
	if _, ok := r.received[ev.ID]; !ok {
		r.received[ev.ID] = time.Now()
	}
	refuse := r.refuse
	r.mu.Unlock()
	ok := func(accepted bool, reason string) {
		b, _ := (&gonostr.OKEnvelope{EventID: ev.ID, OK: accepted, Reason: reason}).MarshalJSON()
		c.write(b)
	}
	if len(ev.ID) != 64 || !ev.CheckID() {
		ok(false, "invalid: bad event id")
		return
	}
	if valid, _ := ev.CheckSignature(); !valid {
		ok(false, "invalid: bad signature")
		return
	}
	if refuse != nil {
		if reason := refuse(ev); reason != "" {
			ok(false, reason)
			return
		}
	}
	r.mu.Lock()
	for _, old := range r.events {
		if old.ID == ev.ID {
			r.mu.Unlock()
			ok(true, "duplicate: already have this event")
			return
		}
	}
	if ev.Kind == gonostr.KindDeletion { // NIP-09: an author may delete their own events
		doomed := map[string]bool{}
		for _, t := range ev.Tags {
			if len(t) >= 2 && t[0] == "e" {
				doomed[t[1]] = true
			}
		}
		kept := r.events[:0]
		for _, old := range r.events {
			if !(doomed[old.ID] && old.PubKey == ev.PubKey) {
				kept = append(kept, old)
			}
		}
		r.events = kept
	}
	r.events = append(r.events, *ev)
	type target struct {
		c  *conn
		id string
	}
	var ts []target
	for oc := range r.conns {
		for id, f := range oc.subs {
			if f.Match(ev) {
				ts = append(ts, target{oc, id})
				r.delivered[ev.ID]++
			}
		}
	}
	r.mu.Unlock()
	ok(true, "")
	for _, t := range ts {
		id := t.id
		b, _ := (&gonostr.EventEnvelope{SubscriptionID: &id, Event: *ev}).MarshalJSON()
		t.c.write(b)
	}
}

func (r *Relay) req(c *conn, id string, fs gonostr.Filters) {
	r.mu.Lock()
	r.reqs++
	c.subs[id] = fs
	var stored []gonostr.Event
	for _, ev := range r.events {
		if fs.Match(&ev) {
			stored = append(stored, ev)
			r.delivered[ev.ID]++
			r.stored[ev.ID]++
		}
	}
	r.mu.Unlock()
	for _, ev := range stored {
		b, _ := (&gonostr.EventEnvelope{SubscriptionID: &id, Event: ev}).MarshalJSON()
		c.write(b)
	}
	eose := gonostr.EOSEEnvelope(id)
	b, _ := eose.MarshalJSON()
	c.write(b)
}

func (c *conn) write(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := wsutil.WriteServerMessage(c.c, ws.OpText, b); err != nil {
		c.c.Close()
	}
}

// Connect dials url with go-nostr's client, as a person's client would
// (nostr.DialRelay: its close avoids go-nostr's race in Relay.Close).
func Connect(ctx context.Context, url string) (*gonostr.Relay, func(), error) {
	return signoffnostr.DialRelay(ctx, url)
}
