package tokens_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/tokens"
	"github.com/signoff/signoff/signing"
)

// owner is alice's signed call, checked by svc as the gateway does.
func ownerCall(t *testing.T, svc *tokens.Service, k *signing.Key) tokens.Caller {
	t.Helper()
	call := tokens.Call{Method: "POST", URL: "http://127.0.0.1/v1/tokens"}
	ev := tokens.HTTPAuthEvent(call, time.Now())
	k.Sign(&ev)
	raw, _ := json.Marshal(ev)
	p, err := tokens.ParseHTTPAuth(tokens.HTTPAuthHeader(raw), call, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err := svc.Person(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServiceRulesAndMarks: nobody but a person or an admin token makes a
// token; the first carries admin; once one exists the marks close the API,
// and a store emptied afterwards is TOKENS LOST — logged once, Ready
// failing — even with the data dir's file deleted, until a person makes
// one again.
func TestServiceRulesAndMarks(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			srv := bottest.Start(t, backend)
			alice := signing.NewKey()
			owners := tokens.OwnersOf([]bot.Persona{{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{{Platform: bot.Nostr, ID: alice.PublicKey()}}}}})
			mark := filepath.Join(t.TempDir(), "tokens.closed")
			history := false
			var logs bytes.Buffer
			newSvc := func() *tokens.Service {
				return &tokens.Service{Store: srv.Store(t), Secret: tokens.NewSecret(), Owners: owners, ClosedMark: mark,
					History: func() bool { return history }, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			}
			svc := newSvc()
			ctx := context.Background()
			admin := tokens.Spec{Name: "me", Scopes: []tokens.Scope{tokens.Admin}}
			if _, _, err := svc.Create(ctx, tokens.Caller{}, admin); bot.ErrorCode(err) != bot.EUnauthorized {
				t.Errorf("a token for nobody: %v", err)
			}
			lesser := &tokens.Token{Name: "agent", Scopes: []tokens.Scope{tokens.Request}}
			if _, _, err := svc.Create(ctx, tokens.Caller{Token: lesser}, admin); bot.ErrorCode(err) != bot.EUnauthorized {
				t.Errorf("a token for a request token: %v", err)
			}
			by := ownerCall(t, svc, alice)
			if _, _, err := svc.Create(ctx, by, tokens.Spec{Name: "ci", Scopes: []tokens.Scope{tokens.Request}}); bot.ErrorCode(err) != bot.EInvalid {
				t.Errorf("a first token without admin: %v", err)
			}
			if closed, _ := svc.Closed(ctx); closed {
				t.Fatal("closed before any token")
			}
			if _, _, err := svc.Create(ctx, by, admin); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(mark); err != nil {
				t.Errorf("no data dir mark: %v", err)
			}
			if ok, _ := srv.Store(t).TokensClosed(ctx); !ok {
				t.Error("no store mark")
			}

			// The store emptied, the file deleted; the audit chain holds
			// the token record. A replica starting now is closed and lost.
			emptied(t, srv)
			os.Remove(mark)
			history = true
			svc = newSvc()
			if closed, err := svc.Closed(ctx); !closed || err != nil {
				t.Errorf("closed = %v, %v with only the audit chain's mark", closed, err)
			}
			for range 3 {
				if err := svc.Ready(ctx); err == nil || !strings.Contains(err.Error(), "TOKENS LOST") {
					t.Fatalf("Ready on the emptied store: %v", err)
				}
			}
			if n := strings.Count(logs.String(), "TOKENS LOST"); n != 1 {
				t.Errorf("TOKENS LOST logged %d times, want once", n)
			}
			if ok, _ := srv.Store(t).TokensClosed(ctx); !ok {
				t.Error("the store's mark was not put back")
			}
			if _, _, err := svc.Create(ctx, ownerCall(t, svc, alice), admin); err != nil {
				t.Fatal(err)
			}
			if err := svc.Ready(ctx); err != nil {
				t.Errorf("Ready once the person made a token: %v", err)
			}
		})
	}
}

func emptied(t *testing.T, srv *bottest.Server) {
	t.Helper()
	c := srv.Client(t)
	ctx := context.Background()
	keys, err := c.Keys(ctx, srv.Prefix+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		c.Del(ctx, k)
	}
}
