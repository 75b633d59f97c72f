package main

import (
	"context"
	"log/slog"
	"net/http"
	"sort"
	"time"

	"github.com/signoff/signoff/adapters/discord"
	"github.com/signoff/signoff/adapters/nostr"
	"github.com/signoff/signoff/adapters/slack"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// platformSet is what the configured platforms add to the gateway.
type platformSet struct {
	runners  map[string]runner
	handlers map[string]http.Handler
}

// platforms wires each platform whose settings are present; each part
// that can start without the others does (the signing secret alone
// enables Slack's HTTP endpoints, the public key alone Discord's).
func platforms(cfg *config, g *bot.Gateway, personas []bot.Persona, key *signing.Key, log *slog.Logger) (platformSet, error) {
	set := platformSet{runners: map[string]runner{}, handlers: map[string]http.Handler{}}
	pending := func(ctx context.Context) ([]*bot.Request, error) {
		return g.List(ctx, bot.Filter{Status: bot.Pending})
	}

	// Nostr: the request events are signed whether or not a relay is
	// configured; relays are named by the personas.
	if relays := personaRelays(personas); len(relays) > 0 {
		a, err := nostr.New(nostr.Config{Key: key, Relays: relays, Pending: pending, Logger: log}, g)
		if err != nil {
			return set, err
		}
		g.Channels[bot.Nostr] = a
		set.runners["nostr"] = a
		log.Info("nostr: relays", "relays", relays)
	}

	if cfg.SlackBotToken != "" || cfg.SlackSigningSecret != "" || cfg.SlackAppToken != "" {
		a, err := slack.New(slack.Config{
			BotToken: string(cfg.SlackBotToken), AppToken: string(cfg.SlackAppToken),
			SigningSecret: string(cfg.SlackSigningSecret), APIURL: cfg.SlackApiUrl, Logger: log,
		}, g)
		if err != nil {
			return set, err
		}
		if cfg.SlackBotToken != "" {
			g.Channels[bot.Slack] = a
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := a.Check(ctx); err != nil {
				log.Error("slack bot token check failed; posts to Slack will fail (and so be denied) until it works", "err", err)
			}
			cancel()
		}
		if cfg.SlackAppToken != "" {
			set.runners["slack"] = a
		}
		if cfg.SlackSigningSecret != "" {
			set.handlers["POST /slack/events"] = a.EventsHandler()
			set.handlers["POST /slack/interactions"] = a.InteractionsHandler()
		}
		log.Info("slack", "posting", cfg.SlackBotToken != "", "socket_mode", cfg.SlackAppToken != "", "http_endpoints", cfg.SlackSigningSecret != "")
	}

	if cfg.DiscordBotToken != "" || cfg.DiscordPublicKey != "" {
		a, err := discord.New(discord.Config{
			BotToken: string(cfg.DiscordBotToken), AppID: cfg.DiscordAppId, PublicKey: cfg.DiscordPublicKey,
			APIURL: cfg.DiscordApiUrl, Pending: pending, Logger: log,
		}, g)
		if err != nil {
			return set, err
		}
		if a.PostingEnabled() {
			g.Channels[bot.Discord] = a
			set.runners["discord"] = a
		}
		if a.InteractionsEnabled() {
			set.handlers["POST /discord/interactions"] = a.InteractionsHandler()
		}
		api := "https://discord.com"
		if cfg.DiscordApiUrl != "" {
			api = cfg.DiscordApiUrl
		}
		log.Info("discord", "posting", a.PostingEnabled(), "http_interactions", a.InteractionsEnabled(), "api", api)
	}
	return set, nil
}

// personaRelays is the union of the relays every persona names.
func personaRelays(personas []bot.Persona) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range personas {
		for _, c := range p.Channels {
			for _, r := range c.Relays {
				if c.Platform == bot.Nostr && !seen[r] {
					seen[r] = true
					out = append(out, r)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}
