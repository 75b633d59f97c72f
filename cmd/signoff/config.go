package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
)

// config is every SIGNOFF_* variable. Only cmd reads the environment.
type config struct {
	Listen   string `default:"127.0.0.1:8080" desc:"address the gateway serves on"`
	URL      string `default:"http://127.0.0.1:8080" desc:"where the CLI finds the gateway"`
	DataDir  string `split_words:"true" desc:"gateway key, audit log (default: user data dir/signoff)"`
	Personas string `default:"configs/personas" desc:"folder of persona files"`
	RedisURL string `split_words:"true" desc:"real Redis; empty: embedded in-memory"`
	// AuditPath defaults to DataDir/audit.jsonl.
	AuditPath   string `split_words:"true" desc:"audit log file"`
	NostrKey    secret `split_words:"true" desc:"the gateway's own key (nsec or hex)"`
	Key         string `desc:"a person's key file for approve/deny"`
	Persona     string `default:"demo" desc:"persona used by request and exec when --persona is not given"`
	Rules       string `desc:"risk rules file overriding the embedded default"`
	LogLevel    string `split_words:"true" default:"info" desc:"debug, info, warn or error"`
	LogFormat   string `split_words:"true" default:"text" desc:"text or json (one JSON object a line)"`
	NetPolicy   string `split_words:"true" default:"configs/network/policy.yaml" desc:"the network policy file"`
	NetBoundary string `split_words:"true" desc:"file of host:port patterns that may ever be approved; empty: no boundary"`

	// GatewayKey and GatewayPin pin the gateway's key on clients.
	GatewayKey string `split_words:"true" desc:"the gateway's public key (npub) clients trust"`
	GatewayPin string `split_words:"true" desc:"file holding the gateway's npub (default ~/.config/signoff/gateway.pub)"`

	// StoreCheck is how often serve checks that Redis still holds the
	// personas it loaded (an empty restart is noticed and reloaded).
	StoreCheck time.Duration `split_words:"true" default:"1s" desc:"how often serve checks Redis still holds its personas"`

	// TestCrashAfterDecide is a failpoint for the fault tests: serve kills
	// itself (SIGKILL) right after it decides a request, before it
	// enqueues or seals the decision. Never set it in a deployment.
	TestCrashAfterDecide bool `split_words:"true" desc:"tests only: serve kills itself right after deciding a request"`

	// PprofListen serves net/http/pprof on its own loopback listener
	// (signoff bench profiles a gateway through it).
	PprofListen string `split_words:"true" desc:"loopback address for /debug/pprof; empty: none"`

	Token         secret `desc:"the bearer token the CLI, hook and MCP server send"`
	TokenFile     string `split_words:"true" desc:"file holding that token, mode 0600 (default: user config dir/signoff/token if present)"`
	TokenSecret   secret `split_words:"true" desc:"key of the tokens' stored hashes (default: kept in the data dir)"`
	RequireTokens onOff  `split_words:"true" desc:"true: refuse calls without a token even on loopback"`

	// AllowedHosts, RateLimit and RateBurst guard the API (bot/httpapi/guard.go).
	// Rate and burst are strings, read by serve only (apiGuards): a bad or
	// empty value must not stop every other command.
	AllowedHosts string `split_words:"true" desc:"names (host or host:port, comma-separated) calls may give as Host besides localhost and IP addresses"`
	RateLimit    string `split_words:"true" default:"50" desc:"calls a second per client (token, else address); 0: no limit"`
	RateBurst    string `split_words:"true" default:"200" desc:"calls a client may make at once before the rate applies"`

	SlackBotToken      secret `split_words:"true"`
	SlackAppToken      secret `split_words:"true"`
	SlackSigningSecret secret `split_words:"true"`
	SlackApiUrl        string `split_words:"true"` // mixed case so split_words gives SLACK_API_URL

	DiscordBotToken  secret `split_words:"true"`
	DiscordAppId     string `split_words:"true"`
	DiscordPublicKey string `split_words:"true"`
	DiscordApiUrl    string `split_words:"true"`
}

// secret is a string that never shows in logs.
type secret string

func (s secret) LogValue() slog.Value {
	if s == "" {
		return slog.StringValue("")
	}
	return slog.StringValue("[redacted]")
}

func loadConfig() (*config, error) {
	var c config
	if err := envconfig.Process("signoff", &c); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	if c.DataDir == "" {
		c.DataDir = filepath.Join(userDataDir(), "signoff")
	}
	if c.AuditPath == "" {
		c.AuditPath = filepath.Join(c.DataDir, "audit.jsonl")
	}
	c.URL = strings.TrimRight(c.URL, "/")
	if err := c.resolveToken(); err != nil {
		return nil, err
	}
	return &c, nil
}

// userDataDir is $XDG_DATA_HOME, else ~/.local/share, else the temp dir.
func userDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return d
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share")
	}
	return os.TempDir()
}

// defaultKeyPath is where keygen writes a person's key.
func defaultKeyPath() string {
	d, err := os.UserConfigDir()
	if err != nil {
		d = userDataDir()
	}
	return filepath.Join(d, "signoff", "key")
}

func (c *config) keyPath() string {
	if c.Key != "" {
		return c.Key
	}
	return defaultKeyPath()
}

// logger returns a logger on w at SIGNOFF_LOG_LEVEL, text or JSON as
// SIGNOFF_LOG_FORMAT says; with a setting it cannot read, the error and a
// text logger at info.
func (c *config) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	err := level.UnmarshalText([]byte(c.LogLevel))
	if err != nil {
		level = slog.LevelInfo
		err = fmt.Errorf("SIGNOFF_LOG_LEVEL %q is not debug, info, warn or error", c.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(strings.TrimSpace(c.LogFormat)) {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), err
	case "", "text":
	default:
		if err == nil {
			err = fmt.Errorf("SIGNOFF_LOG_FORMAT %q is not text or json", c.LogFormat)
		}
	}
	return slog.New(slog.NewTextHandler(w, opts)), err
}
