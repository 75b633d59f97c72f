package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/adapters/slack"
	"github.com/signoff/signoff/adapters/slack/slackfake"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/signing"
)

// Slack user ids in the test personas.
const (
	channelID = "CAPPROVALS"
	alice     = "UALICE" // owner
	bob       = "UBOB"   // member
	carol     = "UCAROL" // member
	agentUser = "UAGENT" // the agent's own Slack user
	stranger  = "USTRANGER"
	secret    = "test-signing-secret"
)

// ownerPersona: alice alone decides.
func ownerPersona() bot.Persona {
	return bot.Persona{
		Name:     "demo",
		Agent:    []bot.Identity{{Platform: bot.Slack, ID: agentUser}},
		Owner:    &bot.Person{Name: "alice", Identities: []bot.Identity{{Platform: bot.Slack, ID: alice}}},
		Members:  []bot.Person{{Name: "bob", Identities: []bot.Identity{{Platform: bot.Slack, ID: bob}}}},
		Proof:    bot.ProofAny,
		Timeout:  5 * time.Minute,
		Channels: []bot.ChannelConfig{{Platform: bot.Slack, Target: channelID}},
	}
}

// quorumPersona: two members approve without the owner; the agent's own
// user is also (wrongly) listed as a member, and must still never count.
func quorumPersona() bot.Persona {
	p := ownerPersona()
	p.Name = "quorum"
	p.ApprovalQuorum = 2
	p.DenyQuorum = 1
	p.Members = []bot.Person{
		{Name: "bob", Identities: []bot.Identity{{Platform: bot.Slack, ID: bob}}},
		{Name: "carol", Identities: []bot.Identity{{Platform: bot.Slack, ID: carol}}},
		{Name: "agent-as-member", Identities: []bot.Identity{{Platform: bot.Slack, ID: agentUser}}},
	}
	return p
}

// harness is a real gateway on the real store, the Slack adapter, and a
// fake Slack the adapter's slack-go client talks to.
type harness struct {
	t       testing.TB
	persona string
	fake    *slackfake.Server
	env     *bottest.Env
	adapter *slack.Adapter
	events  *httptest.Server // EventsHandler
	clicks  *httptest.Server // InteractionsHandler
}

type option func(*slack.Config)

func noBotToken(c *slack.Config) { c.BotToken = "" }
func socketMode(c *slack.Config) { c.AppToken = slackfake.AppToken }

func newHarness(t testing.TB, p bot.Persona, opts ...option) *harness {
	t.Helper()
	fake := slackfake.New(t)
	cfg := slack.Config{
		BotToken:      slackfake.BotToken,
		SigningSecret: secret,
		APIURL:        fake.APIURL,
		Logger:        testLogger(),
	}
	for _, o := range opts {
		o(&cfg)
	}
	channels := map[bot.Platform]bot.Channel{}
	env := bottest.New(t, p, channels)
	a, err := slack.New(cfg, env.Gateway)
	if err != nil {
		t.Fatalf("slack.New: %v", err)
	}
	channels[bot.Slack] = a
	h := &harness{t: t, persona: p.Name, fake: fake, env: env, adapter: a,
		events: httptest.NewServer(a.EventsHandler()), clicks: httptest.NewServer(a.InteractionsHandler())}
	t.Cleanup(h.events.Close)
	t.Cleanup(h.clicks.Close)
	if cfg.AppToken != "" {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run returned %v, want nil after cancel", err)
			}
		})
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer wcancel()
		if err := fake.WaitConnected(wctx); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func slogJSON(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// ctx is a per-step deadline: nothing in these tests waits on the clock
// except to fail.
func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

// submit asks for approval and returns the request and its Slack card.
func (h *harness) submit(action string) (*bot.Request, slackfake.Call) {
	h.t.Helper()
	r := h.env.Submit(h.t, bot.NewRequest{Persona: h.persona, Action: action, Reason: "clean up the build cache"})
	post, err := h.fake.Next(h.ctx(), "chat.postMessage")
	if err != nil {
		h.t.Fatal(err)
	}
	if r.Status != bot.Pending {
		h.t.Fatalf("submitted request is %s (%s), want pending", r.Status, r.DecisionReason)
	}
	return r, post
}

// sendSocket delivers an envelope and waits for its ack.
func (h *harness) sendSocket(typ string, payload any) {
	h.t.Helper()
	id, err := h.fake.Send(h.ctx(), typ, payload)
	if err != nil {
		h.t.Fatal(err)
	}
	got, err := h.fake.NextAck(h.ctx())
	if err != nil {
		h.t.Fatal(err)
	}
	if got != id {
		h.t.Fatalf("ack for envelope %q, want %q", got, id)
	}
}

// get returns the request as stored now.
func (h *harness) get(id string) *bot.Request {
	h.t.Helper()
	r, err := h.env.Gateway.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// signed makes a request as Slack does: body signed at ts.
func signed(target, path string, body []byte, ts time.Time, sec string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, target+path, bytes.NewReader(body))
	stamp := strconv.FormatInt(ts.Unix(), 10)
	req.Header.Set(signing.SlackTimestampHeader, stamp)
	req.Header.Set(signing.SlackSignatureHeader, signing.SignSlack(sec, stamp, body))
	if strings.HasPrefix(string(body), "payload=") {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

func do(t testing.TB, req *http.Request) (int, string) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func formBody(payload any) []byte {
	return []byte("payload=" + url.QueryEscape(string(mustJSON(payload))))
}

// postEvent sends a signed Events API request and returns status and body.
func (h *harness) postEvent(payload any) (int, string) {
	h.t.Helper()
	return do(h.t, signed(h.events.URL, "/slack/events", mustJSON(payload), time.Now(), secret))
}

// postClick sends a signed interactivity request.
func (h *harness) postClick(payload any) (int, string) {
	h.t.Helper()
	return do(h.t, signed(h.clicks.URL, "/slack/interactions", formBody(payload), time.Now(), secret))
}

// votes lists a request's recorded votes as "voter:choice:result".
func votes(r *bot.Request) []string {
	var out []string
	for _, v := range r.Votes {
		out = append(out, v.Voter.ID+":"+string(v.Choice)+":"+string(v.Result))
	}
	return out
}

// blockTypes lists the types of the blocks in a Block Kit JSON array.
func blockTypes(t testing.TB, raw json.RawMessage) []string {
	t.Helper()
	var blocks []struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Fatalf("blocks are not a JSON array: %v\n%s", err, raw)
	}
	var out []string
	for _, b := range blocks {
		out = append(out, b.Type)
	}
	return out
}
