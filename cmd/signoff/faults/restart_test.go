package faults

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/agent"
)

// Redis is killed between two votes and started again on the same port.
// With persistence (AOF, fsync always) the first vote survives and the
// second decides. Without it Redis comes back empty: /readyz says so and
// the personas are loaded again, the request that was pending is gone,
// and nothing is approved that was not.
func TestRedisRestartedBetweenVotes(t *testing.T) {
	for _, persist := range []bool{true, false} {
		name := "without persistence"
		if persist {
			name = "with persistence"
		}
		t.Run(name, func(t *testing.T) {
			rd := startRedis(t, persist)
			f := newFleet(t, rd.url())
			f.extraEnv = []string{"SIGNOFF_STORE_CHECK=1h"} // only /readyz triggers the check: the test sees it fail
			a, b := f.start(), f.start()
			req := f.submit(t, a, "terraform destroy -auto-approve")
			if out := a.vote(t, reaction(t, f.people.bob, req, bot.Approve)); out.Result != bot.Counted || out.Status != bot.Pending {
				t.Fatalf("bob's vote = %+v, want counted, still pending", out)
			}
			// A waiter (the CLI's own wait loop) long-polls on b across the
			// restart.
			waited := make(chan error, 1)
			var seen *bot.Request
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				r, err := agent.Await(ctx, b.api, req, 5*time.Second, nil)
				seen = r
				waited <- err
			}()

			rd.crash()
			for _, r := range []*replica{a, b} {
				if code, body := r.ready(); code == http.StatusOK {
					t.Errorf("%s /readyz = %d %s with Redis down, want a failure", r.name, code, body)
				}
			}
			// The image's HEALTHCHECK says so too.
			if code, out := f.cli(t, "healthcheck", "--ready", "--url", "http://"+a.addr); code != 1 || !strings.Contains(out, "unhealthy") {
				t.Errorf("signoff healthcheck --ready with Redis down = %d %q, want 1 unhealthy", code, out)
			}
			if _, err := b.api.PostEvent(ctxT(t, 10*time.Second), reaction(t, f.people.carol, req, bot.Approve)); err == nil {
				t.Errorf("a vote was accepted with Redis down")
			}
			rd.start()

			if persist {
				a.waitReady(t, 10*time.Second)
				b.waitReady(t, 10*time.Second)
				out := b.vote(t, reaction(t, f.people.carol, req, bot.Approve))
				if out.Result != bot.Counted || out.Status != bot.Approved {
					t.Fatalf("carol's vote after the restart = %+v, want counted, approved", out)
				}
				for _, r := range []*replica{a, b} {
					if n := r.p.logs.Count("store lost its data"); n != 0 {
						t.Errorf("%s reported a lost store %d times after a restart with persistence", r.name, n)
					}
				}
			} else {
				// The first readiness answer once Redis answers again says
				// the store lost its data; then the personas are back.
				deadline := time.Now().Add(10 * time.Second)
				for {
					code, body := a.ready()
					if code == http.StatusOK {
						t.Fatalf("%s /readyz = 200 on a Redis that came back empty, before reloading", a.name)
					}
					if strings.Contains(body, "lost its data") {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s /readyz never said the store lost its data: %d %s", a.name, code, body)
					}
					time.Sleep(20 * time.Millisecond)
				}
				a.waitReady(t, 10*time.Second)
				b.waitReady(t, 10*time.Second)
				if n := a.p.logs.Count("personas loaded again"); n != 1 {
					t.Errorf("%s reloaded the personas %d times, want 1", a.name, n)
				}
				// The lost request stays lost: its vote is refused, it
				// reads as unknown, it was never approved.
				_, err := b.api.PostEvent(ctxT(t, 10*time.Second), reaction(t, f.people.carol, req, bot.Approve))
				if bot.ErrorCode(err) != bot.ENotFound {
					t.Errorf("carol's vote on the lost request = %v, want not found", err)
				}
				if _, err := a.api.Get(ctxT(t, 10*time.Second), req.ID); bot.ErrorCode(err) != bot.ENotFound {
					t.Errorf("get the lost request = %v, want not found", err)
				}
				// The personas are back: a new request is decided as usual.
				again := f.submit(t, b, "terraform destroy -auto-approve")
				if out := a.vote(t, reaction(t, f.people.alice, again, bot.Approve)); out.Status != bot.Approved {
					t.Fatalf("alice's vote on the new request = %+v, want approved", out)
				}
				req = again
			}
			select {
			case err := <-waited:
				switch {
				case persist && (err != nil || seen.Status != bot.Approved):
					t.Errorf("the waiter across the restart ended with %v, %v; want approved", err, seen.Status)
				case !persist && (err == nil || seen.Status == bot.Approved):
					t.Errorf("the waiter on the lost request ended with %v, %v; want an error, not an approval", err, seen.Status)
				}
			case <-time.After(40 * time.Second):
				t.Fatal("the waiter was never answered")
			}
			f.checkAudit(t, []*bot.Request{req})
		})
	}
}
