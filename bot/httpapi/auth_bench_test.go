package httpapi_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/tokens"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// BenchmarkAuthenticatedCall: GET /v1/requests/{id} through the handler,
// with a token and without one in open mode (loopback, no token yet), its
// authentication by a store that reads Redis on every call (no token
// watch: as before it followed the token channel) and by one that
// follows it (as serve does). The store authenticating has a client of
// its own, so token-cmds/op is what authentication sent; the request's
// read is one more round trip, always.
func BenchmarkAuthenticatedCall(b *testing.B) {
	for _, backend := range bottest.Backends() {
		for _, withToken := range []bool{true, false} {
			mode := "open"
			if withToken {
				mode = "token"
			}
			for _, follow := range []bool{false, true} {
				how := "read-every-call"
				if follow {
					how = "from-memory"
				}
				b.Run(backend+"/"+mode+"/"+how, func(b *testing.B) {
					benchAuthenticatedCall(b, backend, withToken, follow)
				})
			}
		}
	}
}

func benchAuthenticatedCall(b *testing.B, backend string, withToken, follow bool) {
	rs := bottest.Start(b, backend)
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{bottest.NewPerson("alice").Identity()}}, Timeout: time.Hour}
	env := bottest.NewOn(b, rs.Client(b), rs.Prefix, p, nil)
	auth, cmds, _ := rs.CountedStore(b)
	if follow {
		followTokens(b, auth)
	}
	secret := tokens.NewSecret()
	header := ""
	if withToken {
		plain, tok, _ := tokens.New(secret, tokens.Spec{Name: "agent", Scopes: []tokens.Scope{tokens.ReadRequests}}, time.Now())
		if err := auth.CreateToken(context.Background(), tok); err != nil {
			b.Fatal(err)
		}
		header = "Bearer " + plain
	}
	api := &httpapi.Server{Gateway: env.Gateway, Auth: &httpapi.Auth{Tokens: auth, Secret: secret}}
	h := api.Handler()
	r := env.Submit(b, bot.NewRequest{Persona: "demo", Action: "ls"})
	req := httptest.NewRequest("GET", "/v1/requests/"+r.ID, nil)
	req.RemoteAddr = "127.0.0.1:40000"
	req.Host = "127.0.0.1:8080"
	if header != "" {
		req.Header.Set("Authorization", header)
	}
	call := func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	for range 3 { // the token's first use is recorded; the memory filled
		call()
	}
	cmds.Reset()
	for b.Loop() {
		call()
	}
	b.ReportMetric(float64(len(cmdsSent(cmds)))/float64(b.N), "token-cmds/op")
}

// cmdsSent lists what c recorded, but a new connection's handshake.
func cmdsSent(c *bottest.Commands) []string {
	var out []string
	for _, name := range []string{"HGETALL", "HLEN", "EVALSHA", "EVAL"} {
		for range c.Count(name, "") {
			out = append(out, name)
		}
	}
	return out
}

var _ httpapi.TokenStore = (*qredis.Store)(nil)
