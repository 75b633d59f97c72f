package discord

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// ErrNoBotToken is returned by Post, Update and Run when the adapter was
// configured with only a public key (interactions endpoint only).
var ErrNoBotToken = &bot.Error{Code: bot.EUnavailable, Message: "discord: no bot token configured: posting and the gateway are off"}

// Adapter posts requests to Discord channels and turns reactions and
// button clicks into ballots. Post and Update are safe for concurrent use;
// Run owns the gateway connection.
type Adapter struct {
	cfg     Config
	sink    bot.VoteSink
	log     *slog.Logger
	session *discordgo.Session // nil: no bot token
	key     ed25519.PublicKey  // nil: no interactions endpoint

	// disconnected is signalled (never blocking) when the gateway drops.
	disconnected chan struct{}

	mu       sync.Mutex
	botID    string
	pending  map[string]pendingMessage // by MessageRef.Key()
	running  bool
	stopping bool
	runCtx   context.Context
	handlers sync.WaitGroup // in-flight gateway events

	// caughtUp, when set (by tests, before Run), is called each time Run
	// has finished reading reactions after a connect.
	caughtUp func()
}

// pendingMessage is a card this process posted whose request is, as far
// as it knows, undecided.
type pendingMessage struct {
	ref       bot.MessageRef
	requestID string
	deadline  time.Time
}

var _ bot.Channel = (*Adapter)(nil)

// New checks cfg and builds an adapter that hands ballots to sink. It does
// no I/O: Run connects.
func New(cfg Config, sink bot.VoteSink) (*Adapter, error) {
	if sink == nil {
		return nil, errors.New("discord: a vote sink is required")
	}
	cfg = cfg.withDefaults()
	cfg.BotToken = strings.TrimSpace(cfg.BotToken)
	if cfg.BotToken == "" && cfg.PublicKey == "" {
		return nil, errors.New("discord: set a bot token, a public key, or both")
	}
	a := &Adapter{
		cfg:          cfg,
		sink:         sink,
		log:          cfg.Logger.With("platform", "discord"),
		disconnected: make(chan struct{}, 1),
		pending:      map[string]pendingMessage{},
	}
	if cfg.PublicKey != "" {
		k, err := signing.ParseDiscordPublicKey(cfg.PublicKey)
		if err != nil {
			return nil, fmt.Errorf("discord: %w", err)
		}
		a.key = k
	}
	if cfg.BotToken != "" {
		s, err := a.newSession()
		if err != nil {
			return nil, err
		}
		a.session = s
	}
	return a, nil
}

func (a *Adapter) newSession() (*discordgo.Session, error) {
	token := a.cfg.BotToken
	if !strings.HasPrefix(token, "Bot ") {
		token = "Bot " + token
	}
	s, err := discordgo.New(token)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	var transport http.RoundTripper = http.DefaultTransport
	if a.cfg.APIURL != "" {
		u, err := url.Parse(a.cfg.APIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("discord: API URL %q must be an http(s) URL", redactURL(a.cfg.APIURL))
		}
		transport = rewriteTransport{base: u, next: transport}
	}
	s.Client = &http.Client{Timeout: 20 * time.Second, Transport: transport}
	s.Dialer = &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: 30 * time.Second,
		NetDialContext:   a.dialGateway,
	}
	// Run owns reconnection, so that no discordgo goroutine outlives it;
	// discordgo still resumes the session on each Open.
	s.ShouldReconnectOnError = false
	s.ShouldReconnectVoiceOnSessionError = false
	s.StateEnabled = false
	// discordgo would print to the standard logger; connection changes
	// and REST failures are logged here, with slog, instead.
	s.LogLevel = discordgo.LogError - 1
	// Guild messages (not privileged) bring replies to the request
	// messages: their content arrives because a reply pings the bot.
	s.Identify.Intents = discordgo.IntentsGuildMessageReactions | discordgo.IntentsDirectMessageReactions | discordgo.IntentsGuildMessages
	s.AddHandler(a.onEvent)
	s.AddHandler(func(*discordgo.Session, *discordgo.Disconnect) {
		select {
		case a.disconnected <- struct{}{}:
		default:
		}
	})
	return s, nil
}

// PostingEnabled reports whether a bot token was configured: Post, Update
// and Run work.
func (a *Adapter) PostingEnabled() bool { return a.session != nil }

// InteractionsEnabled reports whether a public key was configured: the
// interactions endpoint verifies and accepts clicks.
func (a *Adapter) InteractionsEnabled() bool { return a.key != nil }

// Post puts r in the Discord channel c.Target as a card with Approve /
// Deny buttons, then adds the ✅ and ❌ reactions people can tap. A card
// whose reactions could not be added is still posted (the buttons work)
// and is not an error.
func (a *Adapter) Post(ctx context.Context, r *bot.Request, _ bot.Persona, c bot.ChannelConfig) ([]bot.MessageRef, error) {
	if a.session == nil {
		return nil, ErrNoBotToken
	}
	if c.Platform != bot.Discord || c.Target == "" {
		return nil, fmt.Errorf("channel %s:%q is not a Discord channel id", c.Platform, c.Target)
	}
	m, err := a.session.ChannelMessageSendComplex(c.Target, requestMessage(r), discordgo.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("post to channel %s: %w", c.Target, restError(err))
	}
	ref := bot.MessageRef{Platform: bot.Discord, Channel: c.Target, ID: m.ID}
	a.remember(pendingMessage{ref: ref, requestID: r.ID, deadline: r.Deadline})
	for _, e := range []string{emojiApprove, emojiDeny} {
		if err := a.session.MessageReactionAdd(ref.Channel, ref.ID, e, discordgo.WithContext(ctx)); err != nil {
			a.log.Warn("add reaction to request card", "id", r.ID, "channel", ref.Channel, "message", ref.ID, "emoji", e, "err", err)
		}
	}
	a.log.Info("request posted", "id", r.ID, "channel", ref.Channel, "message", ref.ID)
	return []bot.MessageRef{ref}, nil
}

// Update edits every Discord message in refs to show r's outcome, who
// decided and when, and removes the buttons. It returns the edits that
// failed, joined; the caller retries.
func (a *Adapter) Update(ctx context.Context, r *bot.Request, refs []bot.MessageRef) error {
	if a.session == nil {
		return ErrNoBotToken
	}
	if !r.Status.Final() {
		return fmt.Errorf("request %s is %s, not decided", r.ID, r.Status)
	}
	var errs []error
	for _, ref := range refs {
		if ref.Platform != bot.Discord {
			continue
		}
		if _, err := a.session.ChannelMessageEditComplex(decidedEdit(r, ref), discordgo.WithContext(ctx)); err != nil {
			errs = append(errs, fmt.Errorf("edit message %s in channel %s: %w", ref.ID, ref.Channel, restError(err)))
			continue
		}
		a.forget(ref)
	}
	return errors.Join(errs...)
}

func (a *Adapter) remember(p pendingMessage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pending[p.ref.Key()] = p
}

func (a *Adapter) forget(ref bot.MessageRef) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pending, ref.Key())
}

// requestFor names the request a message of ours belongs to, when this
// process posted it. A reaction that races the store's record of the
// message still finds its request this way.
func (a *Adapter) requestFor(ref bot.MessageRef) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.pending[ref.Key()]
	return p.requestID, ok
}

func (a *Adapter) setBotID(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.botID = id
}

func (a *Adapter) selfID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botID
}

// dialGateway dials the gateway's TCP connection and ties it to Run's
// context: when Run ends the socket closes, so no read inside discordgo
// can block past it.
func (a *Adapter) dialGateway(ctx context.Context, network, addr string) (net.Conn, error) {
	a.mu.Lock()
	run := a.runCtx
	a.mu.Unlock()
	if run == nil || a.isStopping() {
		return nil, errors.New("discord: adapter is not running")
	}
	c, err := (&net.Dialer{Timeout: 30 * time.Second}).DialContext(run, network, addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(run, func() { c.Close() })
	return &runConn{Conn: c, stop: stop}, nil
}

type runConn struct {
	net.Conn
	stop func() bool
}

func (c *runConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

// RESTErrorMessage is a Discord API refusal in one line: the status and
// Discord's own message and code.
type RESTErrorMessage struct {
	Status  int
	Code    int
	Message string
	err     error
}

func (e *RESTErrorMessage) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("discord answered HTTP %d", e.Status)
	}
	return fmt.Sprintf("discord answered HTTP %d: %s (code %d)", e.Status, e.Message, e.Code)
}

func (e *RESTErrorMessage) Unwrap() error { return e.err }

// restError makes discordgo's *RESTError (whose text ends with the raw
// body and a newline) readable in logs; other errors pass through.
func restError(err error) error {
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Response == nil {
		return err
	}
	out := &RESTErrorMessage{Status: re.Response.StatusCode, err: err}
	if re.Message != nil {
		out.Code, out.Message = re.Message.Code, re.Message.Message
	}
	return out
}
