package slack

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"
)

// Config is what the adapter needs; cmd/signoff fills it from the
// environment. Each part works without the others: BotToken alone posts
// and edits cards, SigningSecret alone enables the HTTP endpoints,
// AppToken (with or without BotToken) enables Socket Mode.
type Config struct {
	// BotToken (xoxb-…, SIGNOFF_SLACK_BOT_TOKEN) posts, edits and replies.
	BotToken string
	// AppToken (xapp-…, SIGNOFF_SLACK_APP_TOKEN) opens Socket Mode.
	AppToken string
	// SigningSecret (SIGNOFF_SLACK_SIGNING_SECRET) verifies the HTTP
	// Events API and interactivity requests.
	SigningSecret string
	// APIURL (SIGNOFF_SLACK_API_URL) is the Web API base, with a trailing
	// slash; empty means https://slack.com/api/.
	APIURL string
	// Logger receives the adapter's logs; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock for signature windows; nil means time.Now.
	Now func() time.Time
}

// LogValue keeps the tokens and the signing secret out of logs: it says
// only which of them are set.
func (c Config) LogValue() slog.Value {
	set := func(s string) string {
		if s == "" {
			return "unset"
		}
		return "set"
	}
	return slog.GroupValue(
		slog.String("bot_token", set(c.BotToken)),
		slog.String("app_token", set(c.AppToken)),
		slog.String("signing_secret", set(c.SigningSecret)),
		slog.String("api_url", c.apiURL()),
	)
}

// String is LogValue for fmt: a Config printed with %v shows no secret.
func (c Config) String() string {
	return c.LogValue().String()
}

// Enabled reports whether any Slack setting is present.
func (c Config) Enabled() bool {
	return c.BotToken != "" || c.AppToken != "" || c.SigningSecret != ""
}

func (c Config) apiURL() string {
	if c.APIURL == "" {
		return slackapi.APIURL
	}
	return c.APIURL
}

func (c Config) validate() error {
	if !c.Enabled() {
		return fmt.Errorf("slack: none of the bot token, app token and signing secret is set")
	}
	if strings.HasPrefix(c.BotToken, "xapp-") {
		return fmt.Errorf("slack: the bot token is an app-level token (xapp-); use the bot token (xoxb-)")
	}
	if c.AppToken != "" && !strings.HasPrefix(c.AppToken, "xapp-") {
		return fmt.Errorf("slack: the app-level token must start with xapp-")
	}
	u, err := url.Parse(c.apiURL())
	switch {
	case err != nil:
		return fmt.Errorf("slack: API URL: %w", err)
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return fmt.Errorf("slack: API URL %q must be an absolute http(s) URL", c.APIURL)
	case !strings.HasSuffix(u.Path, "/"):
		return fmt.Errorf("slack: API URL %q must end with a slash (e.g. https://slack.com/api/)", c.APIURL)
	}
	return nil
}
