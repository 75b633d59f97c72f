// Package discordfake is a small Discord for tests: the REST calls the
// adapter makes (/api/v9/gateway, /users/@me, channel messages create and
// edit, reactions put and get, interaction callbacks) and a gateway
// websocket speaking the real protocol (HELLO, IDENTIFY, READY,
// heartbeats, RESUME, dispatches) that a test can drop and refuse.
// discordgo's real client runs against it. It is used only by tests.
package discordfake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// GuildID is the guild every fake channel belongs to.
const GuildID = "900000000000000001"

// Server is a fake Discord. Create it with New; it stops with the test.
type Server struct {
	URL   string // http://127.0.0.1:port: the adapter's APIURL
	Token string // the bot token, as the Authorization header carries it: "Bot …"
	BotID string // the bot's user id
	AppID string

	srv *httptest.Server

	mu           sync.Mutex
	changed      chan struct{} // closed and replaced on every change
	next         int64
	messages     map[string]*Message
	posts        []Post
	edits        []Edit
	callbacks    map[string]Callback // by interaction id
	failChannels map[string]bool
	refuse       bool
	conn         *gatewayConn
	sessionID    string
	seq          int64
	identifies   int
	resumes      int
	ready        int // READY or RESUMED sent
}

// Message is a message as the fake holds it.
type Message struct {
	ID, ChannelID string
	Body          json.RawMessage     // the latest create or edit body, as sent
	Reactions     map[string][]string // emoji → user ids, in order
}

// Post is a recorded POST /channels/{c}/messages body.
type Post struct {
	ChannelID, MessageID string
	Body                 json.RawMessage
}

// Edit is a recorded PATCH /channels/{c}/messages/{m} body.
type Edit struct {
	ChannelID, MessageID string
	Body                 json.RawMessage
}

// Callback is a recorded POST /interactions/{id}/{token}/callback body.
type Callback struct {
	InteractionID, Token string
	Body                 json.RawMessage
}

// New starts a fake Discord with a bot token, bot user and application.
func New(t testing.TB) *Server {
	s := &Server{
		Token:        "Bot fake-token-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		BotID:        "800000000000000001",
		AppID:        "700000000000000001",
		changed:      make(chan struct{}),
		next:         1100000000000000000,
		messages:     map[string]*Message{},
		callbacks:    map[string]Callback{},
		failChannels: map[string]bool{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v9/gateway", s.auth(s.gateway))
	mux.HandleFunc("GET /api/v9/users/@me", s.auth(s.me))
	mux.HandleFunc("POST /api/v9/channels/{cid}/messages", s.auth(s.createMessage))
	mux.HandleFunc("PATCH /api/v9/channels/{cid}/messages/{mid}", s.auth(s.editMessage))
	mux.HandleFunc("PUT /api/v9/channels/{cid}/messages/{mid}/reactions/{emoji}/{user}", s.auth(s.putReaction))
	mux.HandleFunc("GET /api/v9/channels/{cid}/messages/{mid}/reactions/{emoji}", s.auth(s.getReactions))
	mux.HandleFunc("POST /api/v9/interactions/{iid}/{token}/callback", s.callback)
	mux.HandleFunc("/gw", s.serveGateway)
	mux.HandleFunc("/gw/", s.serveGateway)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close drops the gateway connection and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.refuse = true
	s.mu.Unlock()
	if c != nil {
		c.ws.Close()
	}
	s.srv.CloseClientConnections()
	s.srv.Close()
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Wait blocks until cond, run under the fake's lock, holds or ctx ends.
func (s *Server) Wait(ctx context.Context, what string, cond func() bool) error {
	for {
		s.mu.Lock()
		ok := cond()
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("discordfake: waiting for %s: %w", what, ctx.Err())
		}
	}
}

func (s *Server) newIDLocked() string {
	s.next++
	return strconv.FormatInt(s.next, 10)
}

// --- REST -----------------------------------------------------------------

func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != s.Token {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "401: Unauthorized", "code": 0})
			return
		}
		h(w, r)
	}
}

func (s *Server) gateway(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"url": "ws://" + r.Host + "/gw"})
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"id": s.BotID, "username": "signoff", "discriminator": "0", "bot": true})
}

// FailChannel makes posts to channel fail as Discord does for a channel
// the bot cannot see.
func (s *Server) FailChannel(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failChannels[channel] = true
}

func (s *Server) createMessage(w http.ResponseWriter, r *http.Request) {
	cid := r.PathValue("cid")
	var body json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Cannot send an empty message", "code": 50006})
		return
	}
	if tooLong(body) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035,
			"errors": map[string]any{"content": map[string]any{"_errors": []map[string]string{{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}}}}})
		return
	}
	s.mu.Lock()
	if s.failChannels[cid] {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Channel", "code": 10003})
		return
	}
	m := &Message{ID: s.newIDLocked(), ChannelID: cid, Body: body, Reactions: map[string][]string{}}
	s.messages[m.ID] = m
	s.posts = append(s.posts, Post{ChannelID: cid, MessageID: m.ID, Body: body})
	out := s.messageJSONLocked(m)
	s.notifyLocked()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// tooLong reports a message body whose content is over Discord's limit
// of 2000 characters, which Discord refuses.
func tooLong(body json.RawMessage) bool {
	var m struct {
		Content string `json:"content"`
	}
	return json.Unmarshal(body, &m) == nil && utf8.RuneCountInString(m.Content) > 2000
}

func (s *Server) editMessage(w http.ResponseWriter, r *http.Request) {
	cid, mid := r.PathValue("cid"), r.PathValue("mid")
	var body json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035})
		return
	}
	if tooLong(body) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035})
		return
	}
	s.mu.Lock()
	m := s.messages[mid]
	if m == nil || m.ChannelID != cid {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Message", "code": 10008})
		return
	}
	m.Body = body
	s.edits = append(s.edits, Edit{ChannelID: cid, MessageID: mid, Body: body})
	out := s.messageJSONLocked(m)
	s.notifyLocked()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) messageJSONLocked(m *Message) map[string]any {
	out := map[string]any{}
	json.Unmarshal(m.Body, &out)
	out["id"] = m.ID
	out["channel_id"] = m.ChannelID
	out["author"] = map[string]any{"id": s.BotID, "username": "signoff", "bot": true}
	out["timestamp"] = time.Now().UTC().Format(time.RFC3339)
	return out
}

func (s *Server) putReaction(w http.ResponseWriter, r *http.Request) {
	cid, mid, emoji, user := r.PathValue("cid"), r.PathValue("mid"), r.PathValue("emoji"), r.PathValue("user")
	if user != "@me" {
		writeJSON(w, http.StatusForbidden, map[string]any{"message": "Missing Permissions", "code": 50013})
		return
	}
	if !s.addReaction(cid, mid, s.BotID, emoji) {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Message", "code": 10008})
		return
	}
	// Discord tells the gateway about the bot's own reactions too.
	s.dispatch("MESSAGE_REACTION_ADD", reactionEvent(cid, mid, s.BotID, emoji))
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) addReaction(cid, mid, user, emoji string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[mid]
	if m == nil || m.ChannelID != cid {
		return false
	}
	if !slices.Contains(m.Reactions[emoji], user) {
		m.Reactions[emoji] = append(m.Reactions[emoji], user)
	}
	s.notifyLocked()
	return true
}

func (s *Server) getReactions(w http.ResponseWriter, r *http.Request) {
	cid, mid, emoji := r.PathValue("cid"), r.PathValue("mid"), r.PathValue("emoji")
	limit := 25
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035})
			return
		}
		limit = n
	}
	after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
	s.mu.Lock()
	m := s.messages[mid]
	if m == nil || m.ChannelID != cid {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Message", "code": 10008})
		return
	}
	ids := slices.Clone(m.Reactions[emoji])
	s.mu.Unlock()
	// Discord lists reactors by ascending user id, paged with after.
	slices.SortFunc(ids, func(a, b string) int {
		x, _ := strconv.ParseUint(a, 10, 64)
		y, _ := strconv.ParseUint(b, 10, 64)
		return cmpUint(x, y)
	})
	users := []map[string]any{}
	for _, id := range ids {
		n, _ := strconv.ParseUint(id, 10, 64)
		if n <= after {
			continue
		}
		if len(users) == limit {
			break
		}
		users = append(users, map[string]any{"id": id, "username": "user" + id, "bot": id == s.BotID})
	}
	writeJSON(w, http.StatusOK, users)
}

func cmpUint(x, y uint64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	iid, token := r.PathValue("iid"), r.PathValue("token")
	var body json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, done := s.callbacks[iid]; done {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Interaction has already been acknowledged.", "code": 40060})
		return
	}
	s.callbacks[iid] = Callback{InteractionID: iid, Token: token, Body: body}
	s.notifyLocked()
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// --- what tests read ------------------------------------------------------

// Posts returns every message created so far.
func (s *Server) Posts() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.posts)
}

// Edits returns every edit of message id so far.
func (s *Server) Edits(id string) []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Edit
	for _, e := range s.edits {
		if e.MessageID == id {
			out = append(out, e)
		}
	}
	return out
}

// WaitEdit waits for the first edit of message id.
func (s *Server) WaitEdit(ctx context.Context, id string) (Edit, error) {
	var e Edit
	err := s.Wait(ctx, "an edit of message "+id, func() bool {
		for _, x := range s.edits {
			if x.MessageID == id {
				e = x
				return true
			}
		}
		return false
	})
	return e, err
}

// WaitCallback waits for the response to interaction id.
func (s *Server) WaitCallback(ctx context.Context, id string) (Callback, error) {
	var c Callback
	err := s.Wait(ctx, "the response to interaction "+id, func() bool {
		var ok bool
		c, ok = s.callbacks[id]
		return ok
	})
	return c, err
}

// CallbackFor returns the response to interaction id, if any.
func (s *Server) CallbackFor(id string) (Callback, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.callbacks[id]
	return c, ok
}

// Reactions returns who reacted to message id with emoji.
func (s *Server) Reactions(id, emoji string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.messages[id]; m != nil {
		return slices.Clone(m.Reactions[emoji])
	}
	return nil
}

// WaitReactions waits until message id has n reactions of emoji.
func (s *Server) WaitReactions(ctx context.Context, id, emoji string, n int) error {
	return s.Wait(ctx, fmt.Sprintf("%d %s on %s", n, emoji, id), func() bool {
		m := s.messages[id]
		return m != nil && len(m.Reactions[emoji]) >= n
	})
}

// Sessions reports how many IDENTIFYs and RESUMEs the gateway accepted.
func (s *Server) Sessions() (identifies, resumes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identifies, s.resumes
}

// WaitConnected waits until the gateway has sent READY or RESUMED n
// times in all and a connection is up.
func (s *Server) WaitConnected(ctx context.Context, n int) error {
	return s.Wait(ctx, fmt.Sprintf("gateway session %d", n), func() bool { return s.ready >= n && s.conn != nil })
}

// --- what tests do --------------------------------------------------------

// React adds user's reaction to a message and dispatches
// MESSAGE_REACTION_ADD, as Discord does when someone taps it. It reports
// whether a gateway connection was there to receive it.
func (s *Server) React(channel, message, user, emoji string) (bool, error) {
	if !s.addReaction(channel, message, user, emoji) {
		return false, fmt.Errorf("discordfake: no message %s in channel %s", message, channel)
	}
	return s.dispatch("MESSAGE_REACTION_ADD", reactionEvent(channel, message, user, emoji)), nil
}

// ReactUnseen adds a reaction without telling the gateway: an event lost
// while the bot was away, visible only by reading the message's reactions.
func (s *Server) ReactUnseen(channel, message, user, emoji string) error {
	if !s.addReaction(channel, message, user, emoji) {
		return fmt.Errorf("discordfake: no message %s in channel %s", message, channel)
	}
	return nil
}

// Click dispatches INTERACTION_CREATE for user clicking the button
// customID on a message, and returns the interaction's id. It reports
// whether a gateway connection was there to receive it.
func (s *Server) Click(channel, message, user, customID string) (id string, delivered bool) {
	s.mu.Lock()
	id = s.newIDLocked()
	s.mu.Unlock()
	payload := InteractionPayload(s.AppID, id, "token-"+id, channel, message, user, customID)
	return id, s.dispatch("INTERACTION_CREATE", payload)
}

// InteractionPayload is a button click as Discord sends it, over the
// gateway (INTERACTION_CREATE's d) or to the interactions endpoint.
func InteractionPayload(appID, id, token, channel, message, user, customID string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"id":             id,
		"application_id": appID,
		"type":           3,
		"token":          token,
		"version":        1,
		"channel_id":     channel,
		"guild_id":       GuildID,
		"member": map[string]any{
			"user":  map[string]any{"id": user, "username": "user" + user, "discriminator": "0"},
			"roles": []string{}, "joined_at": "2024-01-01T00:00:00Z",
		},
		"message": map[string]any{"id": message, "channel_id": channel, "type": 0, "content": "…"},
		"data":    map[string]any{"custom_id": customID, "component_type": 2},
	})
	return b
}

func reactionEvent(channel, message, user, emoji string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"user_id": user, "channel_id": channel, "message_id": message, "guild_id": GuildID,
		"emoji":  map[string]any{"id": nil, "name": emoji},
		"member": map[string]any{"user": map[string]any{"id": user, "username": "user" + user}},
		"burst":  false, "type": 0,
	})
	return b
}

// Drop cuts the gateway connection abruptly, and refuses new ones until
// Allow is called.
func (s *Server) Drop() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.refuse = true
	s.notifyLocked()
	s.mu.Unlock()
	if c != nil {
		c.ws.Close()
	}
}

// Allow lets the gateway accept connections again after Drop.
func (s *Server) Allow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = false
	s.notifyLocked()
}

// --- gateway --------------------------------------------------------------

type gatewayConn struct {
	ws *websocket.Conn
	wm sync.Mutex
}

func (c *gatewayConn) send(v any) error {
	c.wm.Lock()
	defer c.wm.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteJSON(v)
}

type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  int64           `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// HeartbeatInterval is what HELLO tells clients.
const HeartbeatInterval = 1000 * time.Millisecond

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	refuse := s.refuse
	s.mu.Unlock()
	if refuse {
		http.Error(w, "gateway unavailable", http.StatusServiceUnavailable)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &gatewayConn{ws: ws}
	defer ws.Close()
	hello, _ := json.Marshal(map[string]any{"heartbeat_interval": HeartbeatInterval.Milliseconds()})
	if c.send(frame{Op: 10, D: hello}) != nil {
		return
	}
	for {
		var f frame
		if err := ws.ReadJSON(&f); err != nil {
			s.mu.Lock()
			if s.conn == c {
				s.conn = nil
				s.notifyLocked()
			}
			s.mu.Unlock()
			return
		}
		switch f.Op {
		case 1: // heartbeat
			c.send(frame{Op: 11})
		case 2: // identify
			var id struct {
				Token   string `json:"token"`
				Intents int    `json:"intents"`
			}
			json.Unmarshal(f.D, &id)
			if id.Token != s.Token {
				c.wm.Lock()
				ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4004, "Authentication failed."))
				c.wm.Unlock()
				return
			}
			s.mu.Lock()
			s.sessionID = "session-" + s.newIDLocked()
			s.seq = 1
			s.identifies++
			ready, _ := json.Marshal(map[string]any{
				"v": 9, "session_id": s.sessionID, "resume_gateway_url": "ws://" + r.Host + "/gw",
				"user":        map[string]any{"id": s.BotID, "username": "signoff", "bot": true},
				"guilds":      []any{},
				"application": map[string]any{"id": s.AppID, "flags": 0},
			})
			s.online(c, frame{Op: 0, T: "READY", S: s.seq, D: ready})
		case 6: // resume
			var re struct {
				Token     string `json:"token"`
				SessionID string `json:"session_id"`
				Seq       int64  `json:"seq"`
			}
			json.Unmarshal(f.D, &re)
			s.mu.Lock()
			if re.Token != s.Token || re.SessionID == "" || re.SessionID != s.sessionID {
				s.mu.Unlock()
				c.send(frame{Op: 9, D: json.RawMessage("false")})
				continue
			}
			// Events missed while away are not replayed: a test uses
			// ReactUnseen for them, and the adapter must read them back.
			s.seq++
			s.resumes++
			s.online(c, frame{Op: 0, T: "RESUMED", S: s.seq, D: json.RawMessage("{}")})
		}
	}
}

// online sends READY or RESUMED and makes c the connection dispatches go
// to; no dispatch can overtake the READY. Called with s.mu held; releases it.
func (s *Server) online(c *gatewayConn, f frame) {
	c.wm.Lock()
	old := s.conn
	s.conn = c
	s.ready++
	s.notifyLocked()
	s.mu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	c.ws.WriteJSON(f)
	c.wm.Unlock()
	if old != nil && old != c {
		old.ws.Close()
	}
}

// dispatch sends an op-0 event to the connected client; false when none
// is connected (the event is lost, as for a bot that is away).
func (s *Server) dispatch(t string, d json.RawMessage) bool {
	s.mu.Lock()
	c := s.conn
	if c == nil {
		s.mu.Unlock()
		return false
	}
	s.seq++
	f := frame{Op: 0, T: t, S: s.seq, D: d}
	s.mu.Unlock()
	return c.send(f) == nil
}

// String names the fake in test logs.
func (s *Server) String() string { return "discordfake " + strings.TrimPrefix(s.URL, "http://") }
