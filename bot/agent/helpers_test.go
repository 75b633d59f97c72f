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
	"github.com/signoff/signoff/bot/grants"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/permissions"
	"github.com/signoff/signoff/bot/risk"
	"github.com/signoff/signoff/signing"
)

// live is a real gateway behind the real HTTP API, the client an
// integration uses, and the persona's owner.
type live struct {
	env    *bottest.Env
	client *httpapi.Client
	alice  bottest.Person
}

func newLive(t *testing.T, timeout time.Duration, edit ...func(*bot.Persona)) *live {
	t.Helper()
	alice := bottest.NewPerson("alice")
	p := bot.Persona{
		Name:       "demo",
		Owner:      &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}},
		DenyQuorum: 1, Timeout: timeout,
	}
	for _, f := range edit {
		f(&p)
	}
	env := bottest.New(t, p, nil)
	env.Gateway.Classifier = risk.Default()
	env.Gateway.Grants = &grants.Maker{Store: env.Store, Audit: env.Audit}
	checker := &permissions.Checker{Personas: env.Store, Classifier: risk.Default(), Grants: env.Store, Audit: env.Audit, Requests: env.Gateway, MaxWait: time.Second, Notary: env.Key}
	srv := httptest.NewServer((&httpapi.Server{Gateway: env.Gateway, Checker: checker, Logger: slog.New(slog.DiscardHandler)}).Handler())
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

// verify is the receipt check a client pinned to the live gateway's key runs.
func (l *live) verify(asked bot.NewRequest, r *bot.Request) error {
	return signing.CheckApproval(l.env.Key.PublicKey(), asked, r)
}

// fakeGateway decides every request at once with status, or fails. It
// signs a receipt for each decision with a key of its own: a client pinned
// to that key (fg.verify) believes it, any other does not.
type fakeGateway struct {
	status    bot.Status
	submitErr error
	waitErr   error
	mu        sync.Mutex
	asked     []bot.NewRequest
	key       *signing.Key
}

func (f *fakeGateway) signer() *signing.Key {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.key == nil {
		f.key = signing.NewKey()
	}
	return f.key
}

func (f *fakeGateway) verify(asked bot.NewRequest, r *bot.Request) error {
	return signing.CheckApproval(f.signer().PublicKey(), asked, r)
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
	if asked := f.requests(); len(asked) > 0 && f.status.Final() {
		n := asked[len(asked)-1]
		rc, err := f.signer().SealReceipt(bot.Receipt{RequestID: id, Persona: n.Persona, Kind: n.Kind,
			ActionDigest: bot.ActionDigest(n.Kind, n.Action), Nonce: n.Nonce, Status: f.status,
			DecidedBy: r.DecidedBy, DecidedAt: now}, now)
		if err != nil {
			return nil, err
		}
		r.Receipt = rc
	}
	return r, nil
}

func (f *fakeGateway) requests() []bot.NewRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]bot.NewRequest(nil), f.asked...)
}
