package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/adapters/slack"
	"github.com/signoff/signoff/adapters/slack/slackfake"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/signing"
)

// watchedSink passes ballots to the real gateway and notes any that break
// the adapter's promises, for the fuzz targets to check.
type watchedSink struct {
	g  *bot.Gateway
	mu sync.Mutex
	// broken lists promises broken since the last take.
	broken []string
}

func (s *watchedSink) CastVote(ctx context.Context, b bot.Ballot) (bot.VoteOutcome, error) {
	var bad []string
	if b.Voter.Platform != bot.Slack || b.Voter.ID == "" {
		bad = append(bad, fmt.Sprintf("voter %+v", b.Voter))
	}
	if b.Proof != bot.ProofPlatform {
		bad = append(bad, "proof "+string(b.Proof))
	}
	if len(b.DedupKey) < len("slack:x") || b.DedupKey[:6] != "slack:" {
		bad = append(bad, "dedup key "+b.DedupKey)
	}
	if b.RequestID == "" && b.Ref.Platform != bot.Slack {
		bad = append(bad, fmt.Sprintf("ref %+v", b.Ref))
	}
	if !json.Valid(b.Evidence) {
		bad = append(bad, "evidence is not JSON")
	}
	out, err := s.g.CastVote(ctx, b)
	if err == nil && b.Voter.ID == agentUser && out.Result == bot.Counted {
		bad = append(bad, "the agent's own vote counted")
	}
	s.mu.Lock()
	s.broken = append(s.broken, bad...)
	s.mu.Unlock()
	return out, err
}

func (s *watchedSink) Get(ctx context.Context, id string) (*bot.Request, error) {
	return s.g.Get(ctx, id)
}

func (s *watchedSink) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.broken
	s.broken = nil
	return b
}

// fuzzRig is a gateway, an adapter (HTTP only, posting to a fake Slack)
// and one pending request on the quorum persona.
type fuzzRig struct {
	adapter *slack.Adapter
	sink    *watchedSink
	env     *bottest.Env
	req     *bot.Request
	ts      string
}

func newFuzzRig(tb testing.TB) *fuzzRig {
	fake := slackfake.New(tb)
	channels := map[bot.Platform]bot.Channel{}
	env := bottest.New(tb, quorumPersona(), channels)
	sink := &watchedSink{g: env.Gateway}
	a, err := slack.New(slack.Config{BotToken: slackfake.BotToken, SigningSecret: secret, APIURL: fake.APIURL, Logger: testLogger()}, sink)
	if err != nil {
		tb.Fatal(err)
	}
	channels[bot.Slack] = a
	r := env.Submit(tb, bot.NewRequest{Persona: "quorum", Action: "rm -rf /", Reason: "fuzz"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	post, err := fake.Next(ctx, "chat.postMessage")
	if err != nil {
		tb.Fatal(err)
	}
	return &fuzzRig{adapter: a, sink: sink, env: env, req: r, ts: post.TS}
}

func signedRecorder(h http.Handler, body []byte, ts time.Time) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/slack/events", bytes.NewReader(body))
	stamp := strconv.FormatInt(ts.Unix(), 10)
	req.Header.Set(signing.SlackTimestampHeader, stamp)
	req.Header.Set(signing.SlackSignatureHeader, signing.SignSlack(secret, stamp, body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// FuzzEventsHandler feeds validly signed arbitrary bodies to the Events
// API endpoint backed by the real gateway: it never panics, answers only
// 200 or 400, and every ballot it casts keeps the adapter's promises.
func FuzzEventsHandler(f *testing.F) {
	rig := newFuzzRig(f)
	for _, seed := range []any{
		slackfake.ReactionEvent("Ev1", "reaction_added", bob, "white_check_mark", channelID, rig.ts),
		slackfake.ReactionEvent("Ev2", "reaction_added", agentUser, "white_check_mark", channelID, rig.ts),
		slackfake.ReactionEvent("Ev3", "reaction_added", stranger, "x", channelID, rig.ts),
		slackfake.ReactionEvent("Ev4", "reaction_removed", carol, "x", channelID, rig.ts),
		slackfake.ReactionEvent("Ev5", "reaction_added", carol, "eyes", channelID, "1.2"),
		map[string]string{"type": "url_verification", "challenge": "c"},
		map[string]string{"type": "app_rate_limited"},
	} {
		f.Add(mustJSON(seed))
	}
	f.Add([]byte(`{"type":"event_callback","event":{"type":"reaction_added","item":{"type":"message"}}}`))
	f.Add([]byte(`{"type":"event_callback","event":null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(``))
	h := rig.adapter.EventsHandler()
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := signedRecorder(h, body, time.Now())
		switch rec.Code {
		case http.StatusOK:
			if rec.Body.Len() > 0 {
				var c struct{ Challenge string }
				if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil || c.Challenge == "" {
					t.Fatalf("200 with body %q, want nothing or a challenge", rec.Body)
				}
			}
		case http.StatusBadRequest:
		case http.StatusServiceUnavailable:
			// Only for a reaction to a card of the bot's from the last
			// minute that no request names yet: Slack is asked to retry.
			var e struct{ Code string }
			if json.Unmarshal(rec.Body.Bytes(), &e); e.Code != bot.EUnavailable {
				t.Fatalf("503 %s", rec.Body)
			}
		default:
			t.Fatalf("status %d %s for body %q", rec.Code, rec.Body, body)
		}
		if bad := rig.sink.take(); len(bad) > 0 {
			t.Fatalf("body %q broke: %v", body, bad)
		}
	})
}

// FuzzInteractionsHandler does the same for the interactivity endpoint,
// with arbitrary payloads inside a signed form.
func FuzzInteractionsHandler(f *testing.F) {
	rig := newFuzzRig(f)
	f.Add(mustJSON(slackfake.BlockActions(bob, channelID, rig.ts, "signoff_approve", rig.req.ID, "1.1", "")))
	f.Add(mustJSON(slackfake.BlockActions(agentUser, channelID, rig.ts, "signoff_approve", rig.req.ID, "1.2", "")))
	f.Add(mustJSON(slackfake.BlockActions(stranger, channelID, rig.ts, "signoff_deny", "", "1.3", "")))
	f.Add(mustJSON(slackfake.BlockActions(carol, channelID, rig.ts, "other_action", rig.req.ID, "1.4", "")))
	f.Add([]byte(`{"type":"block_actions","actions":[{"action_id":"signoff_deny"}]}`))
	f.Add([]byte(`{"type":"view_submission"}`))
	f.Add([]byte(`not json`))
	h := rig.adapter.InteractionsHandler()
	f.Fuzz(func(t *testing.T, payload []byte) {
		body := []byte("payload=" + url.QueryEscape(string(payload)))
		req := httptest.NewRequest(http.MethodPost, "/slack/interactions", bytes.NewReader(body))
		stamp := strconv.FormatInt(time.Now().Unix(), 10)
		req.Header.Set(signing.SlackTimestampHeader, stamp)
		req.Header.Set(signing.SlackSignatureHeader, signing.SignSlack(secret, stamp, body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
			t.Fatalf("status %d %s for payload %q", rec.Code, rec.Body, payload)
		}
		if bad := rig.sink.take(); len(bad) > 0 {
			t.Fatalf("payload %q broke: %v", payload, bad)
		}
	})
}

// BenchmarkEventsHandler measures the HTTP Events path end to end: Slack's
// signature made and verified, the payload parsed, the ballot judged and
// tallied by the gateway's Lua script and appended to the audit log. Set
// SIGNOFF_TEST_REDIS_URL to run it on a real Redis.
func BenchmarkEventsHandler(b *testing.B) {
	b.Run("adapter-only", func(b *testing.B) {
		// Signature, parsing and ballot building, on a sink that does nothing.
		nop := sinkFunc(func(context.Context, bot.Ballot) (bot.VoteOutcome, error) {
			return bot.VoteOutcome{Result: bot.Ignored, Status: bot.Pending}, nil
		})
		a, err := slack.New(slack.Config{SigningSecret: secret, Logger: testLogger()}, nop)
		if err != nil {
			b.Fatal(err)
		}
		h := a.EventsHandler()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			body := mustJSON(slackfake.ReactionEvent("EvN"+strconv.Itoa(i), "reaction_added", stranger, "white_check_mark", channelID, "1700000000.000100"))
			if rec := signedRecorder(h, body, time.Now()); rec.Code != http.StatusOK {
				b.Fatalf("status %d %s", rec.Code, rec.Body)
			}
		}
	})
	b.Run("ignored", func(b *testing.B) {
		// A stranger's ✅ on a pending card: looked up, judged, recorded.
		rig := newFuzzRig(b)
		h := rig.adapter.EventsHandler()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			body := mustJSON(slackfake.ReactionEvent("EvB"+strconv.Itoa(i), "reaction_added", stranger, "white_check_mark", channelID, rig.ts))
			if rec := signedRecorder(h, body, time.Now()); rec.Code != http.StatusOK {
				b.Fatalf("status %d %s", rec.Code, rec.Body)
			}
		}
	})
	b.Run("deciding", func(b *testing.B) {
		// The owner's ✅ that decides a fresh request (submitted off the clock).
		fake := slackfake.New(b)
		channels := map[bot.Platform]bot.Channel{}
		env := bottest.New(b, ownerPersona(), channels)
		a, err := slack.New(slack.Config{BotToken: slackfake.BotToken, SigningSecret: secret, APIURL: fake.APIURL, Logger: testLogger()}, env.Gateway)
		if err != nil {
			b.Fatal(err)
		}
		channels[bot.Slack] = a
		h := a.EventsHandler()
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			env.Submit(b, bot.NewRequest{Persona: "demo", Action: "rm -rf /tmp/x"})
			post, err := fake.Next(ctx, "chat.postMessage")
			if err != nil {
				b.Fatal(err)
			}
			body := mustJSON(slackfake.ReactionEvent("EvD"+strconv.Itoa(i), "reaction_added", alice, "white_check_mark", channelID, post.TS))
			b.StartTimer()
			if rec := signedRecorder(h, body, time.Now()); rec.Code != http.StatusOK {
				b.Fatalf("status %d %s", rec.Code, rec.Body)
			}
		}
	})
}
