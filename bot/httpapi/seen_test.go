package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/httpapi"
)

// seenFixture is a gateway whose Redis commands are recorded, a persona
// whose strangers' answers are stored but decide nothing, and a client.
func seenFixture(t *testing.T, http2 bool) (*bottest.Env, *bottest.Commands, *httptest.Server, *bot.Request) {
	t.Helper()
	rdb, prefix := bottest.Redis(t)
	log := &bottest.Commands{Tag: bottest.TagListReads}
	rdb.AddHook(log)
	alice := bottest.NewPerson("alice")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}},
		DenyQuorum: 1, Timeout: time.Minute}
	env := bottest.NewOn(t, rdb, prefix, p, nil)
	srv := httptest.NewUnstartedServer((&httpapi.Server{Gateway: env.Gateway}).Handler())
	if http2 {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return env, log, srv, env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy", Nonce: bot.NewNonce()})
}

// TestLongPollAnswersWhatChangedSinceItsLastAnswer: a client's next
// long-poll tells the gateway what its last answer showed (?seen=, from
// the Signoff-Seen header). An answer stored in between is answered at
// once — it used to wait for the next change, or the wait's end — and a
// parked request unchanged since is parked after a look at its status and
// its count of answers, without reading its votes. Over HTTP/2 the wait is
// not parked (it holds its handler's goroutine) and still answers a
// change it has not seen at once.
func TestLongPollAnswersWhatChangedSinceItsLastAnswer(t *testing.T) {
	for _, proto := range []string{"HTTP/1.1", "HTTP/2"} {
		t.Run(proto, func(t *testing.T) {
			env, log, srv, r := seenFixture(t, proto == "HTTP/2")
			c := &httpapi.Client{BaseURL: srv.URL, HTTP: srv.Client()}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			first := make(chan *bot.Request, 1)
			go func() {
				got, err := c.Wait(ctx, r.ID, 15*time.Second)
				if err != nil {
					t.Error(err)
				}
				first <- got
			}()
			waitFor(t, "waiting", func() bool { return env.Gateway.Waiting() == 1 })
			env.React(t, bottest.NewPerson("mallory"), r, "✅") // stored, ignored
			if got := <-first; got == nil || got.Status != bot.Pending || len(got.Votes) != 1 {
				t.Fatalf("first wait = %+v, want pending with 1 answer", got)
			}

			// Stored between the two polls: the next one answers at once.
			// (A probe waiter in the gateway, answered by the vote's
			// notice, shows the notice is handled before the poll starts:
			// a late one would answer any wait.)
			probe := make(chan struct{})
			if _, w, err := env.Gateway.WaitFunc(ctx, r.ID, 15*time.Second, -1, func(*bot.Request, error) { close(probe) }); err != nil || w == nil {
				t.Fatalf("probe wait: %v", err)
			}
			env.React(t, bottest.NewPerson("trudy"), r, "✅")
			<-probe
			waitFor(t, "the probe gone", func() bool { return env.Gateway.Waiting() == 0 })
			quick, cancelQuick := context.WithTimeout(ctx, 5*time.Second)
			defer cancelQuick()
			got, err := c.Wait(quick, r.ID, 15*time.Second)
			if err != nil || got.Status != bot.Pending || len(got.Votes) != 2 {
				t.Fatalf("wait after a change it had not seen = %+v, %v; want answered at once, pending with 2 answers", got, err)
			}

			// Nothing new: waits (parked after a look that reads no votes).
			log.Reset()
			third := make(chan *bot.Request, 1)
			go func() {
				got, err := c.Wait(ctx, r.ID, 15*time.Second)
				if err != nil {
					t.Error(err)
				}
				third <- got
			}()
			waitFor(t, "waiting again", func() bool { return env.Gateway.Waiting() == 1 })
			if n := log.Count("LRANGE", ""); n != 0 && proto == "HTTP/1.1" {
				t.Errorf("a long-poll on a request unchanged since its last answer read it (%d LRANGE): %v", n, log)
			}
			env.React(t, bottest.NewPerson("eve"), r, "✅")
			if got := <-third; got == nil || len(got.Votes) != 3 {
				t.Fatalf("third wait = %+v, want 3 answers", got)
			}
		})
	}
}

// TestLongPollSeenMustBeACount: a bad ?seen= is refused, and nothing waits.
func TestLongPollSeenMustBeACount(t *testing.T) {
	env, _, srv, r := seenFixture(t, false)
	for _, bad := range []string{"-1", "x", "1.5", "99999999999999999999", "%20"} {
		resp, err := http.Get(srv.URL + "/v1/requests/" + r.ID + "?wait=10s&seen=" + bad)
		if err != nil {
			t.Fatal(err)
		}
		var e httpapi.ErrorBody
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || e.Code != bot.EInvalid || !strings.Contains(e.Error, "seen") {
			t.Errorf("seen=%q: %d %+v, want 400 %s naming seen", bad, resp.StatusCode, e, bot.EInvalid)
		}
	}
	if n := env.Gateway.Waiting(); n != 0 {
		t.Errorf("%d waiting after refused polls", n)
	}
}
