package discord

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/signoff/signoff/bot"
)

// Config is the adapter's settings. BotToken enables posting, editing and
// the gateway connection; PublicKey alone enables the HTTP interactions
// endpoint. At least one of them must be set.
type Config struct {
	// BotToken is the bot's token (SIGNOFF_DISCORD_BOT_TOKEN), with or
	// without the "Bot " prefix. Never logged.
	BotToken string
	// AppID is the application id (SIGNOFF_DISCORD_APP_ID). When set,
	// interactions for another application are refused.
	AppID string
	// PublicKey is the application's Ed25519 public key in hex, as the
	// developer portal shows it (SIGNOFF_DISCORD_PUBLIC_KEY).
	PublicKey string
	// APIURL replaces https://discord.com for REST and for GET /gateway
	// (SIGNOFF_DISCORD_API_URL); the gateway websocket then goes wherever
	// that server's /api/v9/gateway says.
	APIURL string

	// Pending lists the requests still pending, so that after a
	// (re)connect the adapter can read the reactions that arrived while
	// it was away. nil: only the messages this process posted are read.
	Pending func(ctx context.Context) ([]*bot.Request, error)

	Logger *slog.Logger
	// Now is the clock for the replay window and ballot times.
	Now func() time.Time
	// EventTimeout bounds the handling of one inbound event (default 10s).
	EventTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the wait between gateway
	// connection attempts (default 1s, doubling up to 1m).
	ReconnectMin, ReconnectMax time.Duration
}

// LogValue shows the settings with the token redacted and the public key
// shortened, so a Config can be logged as is.
func (c Config) LogValue() slog.Value {
	token := "unset"
	if c.BotToken != "" {
		token = "[redacted]"
	}
	key := "unset"
	if c.PublicKey != "" {
		key = c.PublicKey
		if len(key) > 8 {
			key = key[:8] + "…"
		}
	}
	api := c.APIURL
	if api == "" {
		api = "https://discord.com"
	}
	return slog.GroupValue(
		slog.String("bot_token", token),
		slog.String("app_id", c.AppID),
		slog.String("public_key", key),
		slog.String("api_url", redactURL(api)),
	)
}

// redactURL drops any user info from a URL before it is logged.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "[unparsable]"
	}
	return u.Redacted()
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.EventTimeout <= 0 {
		c.EventTimeout = 10 * time.Second
	}
	if c.ReconnectMin <= 0 {
		c.ReconnectMin = time.Second
	}
	if c.ReconnectMax < c.ReconnectMin {
		c.ReconnectMax = max(time.Minute, c.ReconnectMin)
	}
	return c
}

// rewriteTransport sends every request to base instead of the host it
// names, keeping the path (under base's own path, if any). This is how
// APIURL moves discordgo's REST calls without touching its endpoint
// globals, which are process-wide and built at init.
type rewriteTransport struct {
	base *url.URL
	next http.RoundTripper
}

func (t rewriteTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme = t.base.Scheme
	r.URL.Host = t.base.Host
	r.Host = t.base.Host
	if p := strings.TrimSuffix(t.base.Path, "/"); p != "" {
		r.URL.Path = p + r.URL.Path
		if r.URL.RawPath != "" {
			r.URL.RawPath = p + r.URL.RawPath
		}
	}
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		// http.Client names the URL discordgo built (discord.com); say
		// where the call really went.
		return nil, fmt.Errorf("sent to %s: %w", r.URL.Redacted(), err)
	}
	return resp, nil
}
