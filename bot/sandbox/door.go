package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

// AgentRoutes are the gateway's routes an agent inside the sandbox may
// reach: filing and following its own requests, asking whether a call
// may run, and asking for a network door. Nothing that makes or revokes
// tokens or grants, approves a door, votes or publishes.
var AgentRoutes = []string{
	"GET /healthz",
	"GET /readyz",
	"POST /v1/requests",
	"GET /v1/requests",
	"GET /v1/requests/{id}",
	"POST /v1/requests/{id}/withdraw",
	"POST /v1/actions",
	"POST /v1/check",
	"POST /v1/classify",
	"POST /v1/network/requests",
	"POST /v1/network/drafts",
	"GET /v1/network/requests",
	"GET /v1/network/policy",
	"GET /v1/tokens/self",
}

// AgentScopes are the scopes of the token a sandbox is given.
var AgentScopes = []string{"request", "check", "read:requests", "net:request"}

// GatewayDoor is the sandbox's way to the gateway's API: it passes on
// only AgentRoutes, and each with the sandbox's own token in place of
// whatever the agent sent (so no token the agent finds or makes is used).
type GatewayDoor struct {
	Target *url.URL
	// Token is the sandbox's token; empty when the gateway takes calls
	// without one (loopback, no tokens made).
	Token string
}

// Handler is the door as an http.Handler.
func (d *GatewayDoor) Handler() http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(d.Target)
			r.Out.Host = d.Target.Host
			r.Out.Header.Del("Authorization")
			r.Out.Header.Del("Cookie")
			if d.Token != "" {
				r.Out.Header.Set("Authorization", "Bearer "+d.Token)
			}
		},
		FlushInterval: -1, // long polls and progress pass at once
	}
	mux := http.NewServeMux()
	for _, route := range AgentRoutes {
		mux.Handle(route, rp)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(map[string]string{
			"code":  "forbidden",
			"error": "the sandbox's door to the gateway does not lead to " + r.Method + " " + r.URL.Path + ": an agent may file and follow requests, check calls and ask for network access; a person does the rest outside the sandbox",
		})
	})
	return mux
}

// Serve serves the door on ln until ctx ends.
func (d *GatewayDoor) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
