// Package slackfake is a local Slack for tests: the Web API methods
// signoff calls (auth.test, chat.postMessage, chat.update,
// chat.postEphemeral, reactions.add, apps.connections.open), response_url
// endpoints, and a Socket Mode websocket that says hello, pings, delivers
// envelopes and collects acks. slack-go's real client is pointed at it
// with its API URL. Every call it receives is recorded on a channel that
// tests read with a context deadline.
//
// It is a test helper: nothing in the product imports it.
package slackfake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Identities the fake answers with.
const (
	BotToken  = "xoxb-fake-bot-token"
	AppToken  = "xapp-fake-app-token"
	BotUserID = "UFAKEBOT"
	BotID     = "BFAKEBOT"
	TeamID    = "TFAKE"
	AppID     = "AFAKE"
)

// Call is one Web API call or response_url post the fake received.
type Call struct {
	Method  string // chat.postMessage, chat.update, …, or "response_url"
	Token   string
	Channel string
	TS      string
	User    string // chat.postEphemeral
	Name    string // reactions.add
	Text    string
	Blocks  json.RawMessage // nil when the call carried none
	Form    url.Values
	Body    []byte // response_url: the JSON posted
}

// Server is a fake Slack. Create it with New.
type Server struct {
	// URL is the server's base; APIURL is what slack.OptionAPIURL wants.
	URL    string
	APIURL string
	// PingEvery is how often the socket pings (default 100ms); set it
	// before the client connects.
	PingEvery time.Duration

	srv *httptest.Server
	seq atomic.Int64 // message timestamps and envelope ids

	calls     map[string]chan Call
	acks      chan string
	opens     atomic.Int64
	dials     atomic.Int64
	closing   chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	fail    map[string]string // method → error of its next call
	conn    *wsConn
	changed chan struct{} // closed when conn changes
	conns   map[*wsConn]struct{}
}

type wsConn struct {
	c    *websocket.Conn
	wmu  sync.Mutex
	done chan struct{}
	once sync.Once
}

func (w *wsConn) write(typ int, data []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return w.c.WriteMessage(typ, data)
}

func (w *wsConn) close() {
	w.once.Do(func() {
		close(w.done)
		w.c.Close()
	})
}

// New starts a fake Slack that t cleans up.
func New(t testing.TB) *Server {
	s := &Server{
		PingEvery: 100 * time.Millisecond,
		calls:     map[string]chan Call{},
		acks:      make(chan string, 1024),
		closing:   make(chan struct{}),
		fail:      map[string]string{},
		changed:   make(chan struct{}),
		conns:     map[*wsConn]struct{}{},
	}
	s.seq.Store(100)
	for _, m := range []string{"auth.test", "chat.postMessage", "chat.update", "chat.postEphemeral", "reactions.add", "response_url"} {
		s.calls[m] = make(chan Call, 1024)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/auth.test", s.webAPI("auth.test", func(f url.Values) map[string]any {
		return map[string]any{"url": "https://fake.slack.com/", "team": "fake", "user": "signoff",
			"team_id": TeamID, "user_id": BotUserID, "bot_id": BotID}
	}))
	mux.HandleFunc("POST /api/chat.postMessage", s.webAPI("chat.postMessage", func(f url.Values) map[string]any {
		return map[string]any{"channel": f.Get("channel"), "ts": s.nextTS()}
	}))
	mux.HandleFunc("POST /api/chat.update", s.webAPI("chat.update", func(f url.Values) map[string]any {
		return map[string]any{"channel": f.Get("channel"), "ts": f.Get("ts"), "text": f.Get("text")}
	}))
	mux.HandleFunc("POST /api/chat.postEphemeral", s.webAPI("chat.postEphemeral", func(f url.Values) map[string]any {
		return map[string]any{"message_ts": s.nextTS()}
	}))
	mux.HandleFunc("POST /api/reactions.add", s.webAPI("reactions.add", func(f url.Values) map[string]any {
		return map[string]any{}
	}))
	mux.HandleFunc("POST /api/apps.connections.open", s.open)
	mux.HandleFunc("GET /link/", s.link)
	mux.HandleFunc("POST /response/{id}", s.response)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"ok": false, "error": "unknown_method"})
	})
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	s.APIURL = s.srv.URL + "/api/"
	t.Cleanup(s.Close)
	return s
}

// Close drops every socket and stops the server.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.mu.Lock()
		for c := range s.conns {
			c.close()
		}
		s.mu.Unlock()
		s.srv.Close()
	})
}

func (s *Server) nextTS() string {
	return fmt.Sprintf("%d.%06d", time.Now().Unix(), s.seq.Add(1))
}

// Fail makes the next call of method answer {"ok":false,"error":slackErr}.
func (s *Server) Fail(method, slackErr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[method] = slackErr
}

func (s *Server) takeFailure(method string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.fail[method]
	delete(s.fail, method)
	return e
}

// webAPI serves a form-encoded Web API method: it checks the bot token,
// records the call and answers ok with reply's fields.
func (s *Server) webAPI(method string, reply func(url.Values) map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			writeJSON(w, map[string]any{"ok": false, "error": "invalid_form_data"})
			return
		}
		token := r.PostForm.Get("token")
		if token == "" {
			token, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		if token != BotToken {
			writeJSON(w, map[string]any{"ok": false, "error": "invalid_auth"})
			return
		}
		if e := s.takeFailure(method); e != "" {
			writeJSON(w, map[string]any{"ok": false, "error": e})
			return
		}
		c := Call{Method: method, Token: token, Channel: r.PostForm.Get("channel"), TS: r.PostForm.Get("ts"),
			User: r.PostForm.Get("user"), Name: r.PostForm.Get("name"), Text: r.PostForm.Get("text"), Form: r.PostForm}
		if b := r.PostForm.Get("blocks"); b != "" {
			c.Blocks = json.RawMessage(b)
		}
		out := reply(r.PostForm)
		if method == "chat.postMessage" {
			c.TS = out["ts"].(string)
		}
		s.record(method, c)
		out["ok"] = true
		writeJSON(w, out)
	}
}

func (s *Server) record(method string, c Call) {
	select {
	case s.calls[method] <- c:
	default: // nobody reads them (a benchmark): keep the newest 1024
		select {
		case <-s.calls[method]:
		default:
		}
		s.record(method, c)
	}
}

func (s *Server) open(w http.ResponseWriter, r *http.Request) {
	s.opens.Add(1)
	if r.Header.Get("Authorization") != "Bearer "+AppToken {
		writeJSON(w, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	if e := s.takeFailure("apps.connections.open"); e != "" {
		writeJSON(w, map[string]any{"ok": false, "error": e})
		return
	}
	wsURL := "ws" + strings.TrimPrefix(s.URL, "http") + "/link/?ticket=" + strconv.FormatInt(s.seq.Add(1), 10)
	writeJSON(w, map[string]any{"ok": true, "url": wsURL})
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// link is the Socket Mode websocket: hello, pings, then acks read back.
func (s *Server) link(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.dials.Add(1)
	conn := &wsConn{c: c, done: make(chan struct{})}
	defer conn.close()
	hello, _ := json.Marshal(map[string]any{"type": "hello", "num_connections": 1,
		"connection_info": map[string]any{"app_id": AppID}, "debug_info": map[string]any{"host": "slackfake"}})
	if conn.write(websocket.TextMessage, hello) != nil {
		return
	}
	s.mu.Lock()
	select {
	case <-s.closing:
		s.mu.Unlock()
		return
	default:
	}
	s.conns[conn] = struct{}{}
	s.setConn(conn)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		if s.conn == conn {
			s.setConn(nil)
		}
		s.mu.Unlock()
	}()

	var wg sync.WaitGroup
	defer wg.Wait()
	defer conn.close()
	wg.Go(func() {
		t := time.NewTicker(s.PingEvery)
		defer t.Stop()
		for {
			select {
			case <-conn.done:
				return
			case <-t.C:
				conn.wmu.Lock()
				err := c.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(time.Second))
				conn.wmu.Unlock()
				if err != nil {
					conn.close()
					return
				}
			}
		}
	})
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(msg, &ack) == nil && ack.EnvelopeID != "" {
			select {
			case s.acks <- ack.EnvelopeID:
			default:
			}
		}
	}
}

// setConn must be called with s.mu held.
func (s *Server) setConn(c *wsConn) {
	s.conn = c
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitConnected waits until a Socket Mode client is connected (it has
// been sent hello).
func (s *Server) WaitConnected(ctx context.Context) error {
	_, err := s.current(ctx)
	return err
}

// WaitDials waits until the n-th websocket connection is up (a client
// that reconnected after a disconnect or a dropped socket).
func (s *Server) WaitDials(ctx context.Context, n int64) error {
	for {
		s.mu.Lock()
		c, changed := s.conn, s.changed
		s.mu.Unlock()
		if c != nil && s.dials.Load() >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("slackfake: %d of %d connections made: %w", s.dials.Load(), n, ctx.Err())
		}
	}
}

func (s *Server) current(ctx context.Context) (*wsConn, error) {
	for {
		s.mu.Lock()
		c, changed := s.conn, s.changed
		s.mu.Unlock()
		if c != nil {
			return c, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("slackfake: no socket mode client connected: %w", ctx.Err())
		}
	}
}

// Send delivers a Socket Mode envelope of type typ ("events_api",
// "interactive", "disconnect", …) to the connected client, waiting for
// one, and returns its envelope id.
func (s *Server) Send(ctx context.Context, typ string, payload any) (string, error) {
	c, err := s.current(ctx)
	if err != nil {
		return "", err
	}
	id := "env-" + strconv.FormatInt(s.seq.Add(1), 10)
	env := map[string]any{"type": typ, "envelope_id": id, "accepts_response_payload": false, "retry_attempt": 0}
	if payload != nil {
		env["payload"] = payload
	}
	if typ == "disconnect" {
		env = map[string]any{"type": "disconnect", "reason": "refresh_requested", "debug_info": map[string]any{"host": "slackfake"}}
	}
	raw, err := json.Marshal(env)
	if err != nil {
		return "", err
	}
	if err := c.write(websocket.TextMessage, raw); err != nil {
		return "", fmt.Errorf("slackfake: send envelope: %w", err)
	}
	return id, nil
}

// DropConnection closes the current socket as a network failure would.
func (s *Server) DropConnection() {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// Opens and Dials count apps.connections.open calls and websocket
// connections.
func (s *Server) Opens() int64 { return s.opens.Load() }
func (s *Server) Dials() int64 { return s.dials.Load() }

// NextAck returns the next acknowledged envelope id.
func (s *Server) NextAck(ctx context.Context) (string, error) {
	select {
	case id := <-s.acks:
		return id, nil
	case <-ctx.Done():
		return "", fmt.Errorf("slackfake: no ack: %w", ctx.Err())
	}
}

// Next returns the next recorded call of method.
func (s *Server) Next(ctx context.Context, method string) (Call, error) {
	ch, ok := s.calls[method]
	if !ok {
		return Call{}, fmt.Errorf("slackfake: %s is not recorded", method)
	}
	select {
	case c := <-ch:
		return c, nil
	case <-ctx.Done():
		return Call{}, fmt.Errorf("slackfake: no %s call: %w", method, ctx.Err())
	}
}

// Pending returns the calls of method recorded and not yet read, without
// waiting.
func (s *Server) Pending(method string) []Call {
	var out []Call
	for {
		select {
		case c := <-s.calls[method]:
			out = append(out, c)
		default:
			return out
		}
	}
}

// ResponseURL is an interaction's response_url on this fake.
func (s *Server) ResponseURL(id string) string { return s.URL + "/response/" + id }

func (s *Server) response(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var msg struct {
		Text         string `json:"text"`
		ResponseType string `json:"response_type"`
	}
	json.Unmarshal(body, &msg)
	s.record("response_url", Call{Method: "response_url", TS: r.PathValue("id"), Text: msg.Text, Body: body})
	w.Write([]byte("ok"))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// ReactionEvent is an Events API payload for reaction_added or
// reaction_removed on the message channel/ts, as Slack sends it.
func ReactionEvent(eventID, typ, user, reaction, channel, ts string) map[string]any {
	now := time.Now().Unix()
	return map[string]any{
		"token": "fake-verification-token", "team_id": TeamID, "api_app_id": AppID,
		"type": "event_callback", "event_id": eventID, "event_time": now,
		"event": map[string]any{
			"type": typ, "user": user, "reaction": reaction, "item_user": BotUserID,
			"item":     map[string]any{"type": "message", "channel": channel, "ts": ts},
			"event_ts": fmt.Sprintf("%d.000200", now),
		},
		"authorizations": []any{map[string]any{"team_id": TeamID, "user_id": BotUserID, "is_bot": true}},
	}
}

// BlockActions is an interactivity payload for one button click, as
// Slack sends it (block_id included: slack-go needs it).
func BlockActions(user, channel, ts, actionID, value, actionTS, responseURL string) map[string]any {
	return map[string]any{
		"type": "block_actions", "api_app_id": AppID, "token": "fake-verification-token",
		"user":         map[string]any{"id": user, "username": strings.ToLower(user), "team_id": TeamID},
		"team":         map[string]any{"id": TeamID, "domain": "fake"},
		"container":    map[string]any{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false},
		"channel":      map[string]any{"id": channel, "name": "approvals"},
		"message":      map[string]any{"type": "message", "ts": ts, "bot_id": BotID, "user": BotUserID, "text": "⛔ approval needed"},
		"trigger_id":   "1.2.fake",
		"response_url": responseURL,
		"actions": []any{map[string]any{
			"action_id": actionID, "block_id": "signoff:" + value, "value": value, "type": "button",
			"action_ts": actionTS, "text": map[string]any{"type": "plain_text", "text": actionID, "emoji": true},
		}},
	}
}
