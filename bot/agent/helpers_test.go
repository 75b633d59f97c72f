package agent_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/risk"
)

// live is a real gateway behind the real HTTP API, the client an
// integration uses, and the persona's owner.
type live struct {
	env    *bottest.Env
	client *httpapi.Client
	alice  bottest.Person
}

func newLive(t *testing.T, timeout time.Duration) *live {
	t.Helper()
	alice := bottest.NewPerson("alice")
	p := bot.Persona{
		Name:       "demo",
		Owner:      &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}},
		DenyQuorum: 1, Timeout: timeout,
	}
	env := bottest.New(t, p, nil)
	env.Gateway.Classifier = risk.Default()
	srv := httptest.NewServer((&httpapi.Server{Gateway: env.Gateway, Logger: slog.New(slog.DiscardHandler)}).Handler())
	t.Cleanup(srv.Close)
	return &live{env: env, client: httpapi.NewClient(srv.URL), alice: alice}
}

// answer waits (in the background) for the next pending request, reacts
// to it with content as the owner, and sends the request on the channel.
func (l *live) answer(t *testing.T, content string) <-chan *bot.Request {
	t.Helper()
	got := make(chan *bot.Request, 1)
	var once sync.Once
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			rs, err := l.env.Gateway.List(context.Background(), bot.Filter{Status: bot.Pending})
			if err == nil && len(rs) > 0 {
				once.Do(func() {
					l.env.React(t, l.alice, rs[0], content)
					got <- rs[0]
				})
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(got)
	}()
	return got
}

// fakeGateway decides every request at once with status, or fails.
type fakeGateway struct {
	status    bot.Status
	submitErr error
	waitErr   error
	mu        sync.Mutex
	asked     []bot.NewRequest
}

func (f *fakeGateway) Submit(_ context.Context, n bot.NewRequest) (*bot.Request, error) {
	f.mu.Lock()
	f.asked = append(f.asked, n)
	f.mu.Unlock()
	if f.submitErr != nil {
		return nil, f.submitErr
	}
	now := time.Now()
	return &bot.Request{ID: "req1", Persona: n.Persona, Kind: n.Kind, Action: n.Action, Reason: n.Reason,
		Status: bot.Pending, CreatedAt: now, Deadline: now.Add(time.Minute)}, nil
}

func (f *fakeGateway) Wait(_ context.Context, id string, _ time.Duration) (*bot.Request, error) {
	if f.waitErr != nil {
		return nil, f.waitErr
	}
	now := time.Now()
	r := &bot.Request{ID: id, Status: f.status, DecidedAt: &now, Deadline: now}
	switch f.status {
	case bot.Approved:
		r.DecidedBy = []string{"alice"}
	case bot.Denied:
		r.DecidedBy = []string{"carol"}
	case bot.Expired:
		r.DecisionReason = "no one answered in time, and silence is not consent"
	}
	return r, nil
}

func (f *fakeGateway) requests() []bot.NewRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]bot.NewRequest(nil), f.asked...)
}
