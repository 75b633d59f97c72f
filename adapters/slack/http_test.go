package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/adapters/slack"
	"github.com/signoff/signoff/adapters/slack/slackfake"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// Through the HTTP Events API and interactivity endpoint: requests signed
// the way Slack signs them, votes tallied by the real gateway and store.

func TestHTTPOwnerApprovesByReaction(t *testing.T) {
	h := newHarness(t, ownerPersona())
	r, post := h.submit("rm -rf ./build")
	status, body := h.postEvent(slackfake.ReactionEvent("EvH1", "reaction_added", alice, "white_check_mark", channelID, post.TS))
	if status != http.StatusOK {
		t.Fatalf("POST /slack/events = %d %s, want 200", status, body)
	}
	got := h.env.Await(t, r.ID)
	if got.Status != bot.Approved {
		t.Fatalf("status = %s, want approved", got.Status)
	}
	up, err := h.fake.Next(h.ctx(), "chat.update")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(up.Text, "✅ approved by alice at ") || slices.Contains(blockTypes(t, up.Blocks), "actions") {
		t.Errorf("card updated to %q with blocks %v, want the outcome and no buttons", up.Text, blockTypes(t, up.Blocks))
	}
}

func TestHTTPQuorumByClickAndReaction(t *testing.T) {
	h := newHarness(t, quorumPersona())
	r, post := h.submit("terraform apply")
	if status, body := h.postClick(slackfake.BlockActions(carol, channelID, post.TS, "signoff_approve", r.ID, "1700000010.000001", h.fake.ResponseURL("c"))); status != http.StatusOK {
		t.Fatalf("POST /slack/interactions = %d %s, want 200", status, body)
	}
	if status, body := h.postEvent(slackfake.ReactionEvent("EvB1", "reaction_added", bob, "white_check_mark", channelID, post.TS)); status != http.StatusOK {
		t.Fatalf("POST /slack/events = %d %s, want 200", status, body)
	}
	got := h.env.Await(t, r.ID)
	if got.Status != bot.Approved || !slices.Equal(got.DecidedBy, []string{"bob", "carol"}) {
		t.Fatalf("request is %s by %v, want approved by [bob carol]", got.Status, got.DecidedBy)
	}
}

// The signed event every refusal below is a variant of: bob, a member of
// a quorum of 2, approves, which counts but does not decide.
func TestHTTPEventsRefusals(t *testing.T) {
	h := newHarness(t, quorumPersona())
	r, post := h.submit("git push --force")
	event := mustJSON(slackfake.ReactionEvent("EvR1", "reaction_added", bob, "white_check_mark", channelID, post.TS))
	now := time.Now()
	withHeader := func(req *http.Request, k, v string) *http.Request { req.Header.Set(k, v); return req }
	unsigned, _ := http.NewRequest(http.MethodPost, h.events.URL, bytes.NewReader(event))
	huge := append(bytes.Repeat([]byte(" "), slack.MaxBodyBytes), event...)
	tampered := bytes.Replace(event, []byte(bob), []byte(alice), 1)
	tamperedReq := signed(h.events.URL, "", event, now, secret)
	tamperedReq.Body = httpBody(tampered)
	tamperedReq.ContentLength = int64(len(tampered))

	tests := []struct {
		name     string
		req      *http.Request
		status   int
		code     string
		contains string
	}{
		{"wrong secret", signed(h.events.URL, "", event, now, "not-the-secret"), 401, bot.EUnauthorized, "does not match"},
		{"bad signature", withHeader(signed(h.events.URL, "", event, now, secret), signing.SlackSignatureHeader, "v0="+strings.Repeat("ab", 32)), 401, bot.EUnauthorized, "does not match"},
		{"body changed after signing (alice for bob)", tamperedReq, 401, bot.EUnauthorized, "does not match"},
		{"no signature headers", unsigned, 401, bot.EUnauthorized, "missing"},
		{"stale timestamp (5m01s old)", signed(h.events.URL, "", event, now.Add(-5*time.Minute-time.Second), secret), 401, bot.EStale, "window"},
		{"future timestamp (6m ahead)", signed(h.events.URL, "", event, now.Add(6*time.Minute), secret), 401, bot.EStale, "window"},
		{"malformed JSON, signed", signed(h.events.URL, "", []byte(`{"type":"event_callback","event":`), now, secret), 400, bot.EInvalid, ""},
		{"JSON of the wrong shape, signed", signed(h.events.URL, "", []byte(`{"type":"event_callback","event":{"type":"reaction_added","item":{"type":"message"}}}`), now, secret), 400, bot.EInvalid, ""},
		{"body over 1 MiB", signed(h.events.URL, "", huge, now, secret), 413, bot.ETooLarge, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(t, tt.req)
			if status != tt.status {
				t.Fatalf("status = %d %s, want %d", status, body, tt.status)
			}
			var e struct{ Error, Code string }
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("error body %q is not JSON: %v", body, err)
			}
			if e.Code != tt.code || !strings.Contains(e.Error, tt.contains) {
				t.Errorf("error = %+v, want code %q and a message containing %q", e, tt.code, tt.contains)
			}
		})
	}
	if got := h.get(r.ID); got.Status != bot.Pending || len(got.Votes) != 0 {
		t.Fatalf("after refused requests: %s with votes %v, want pending with none", got.Status, votes(got))
	}

	// The genuine event counts; Slack's retries of it (X-Slack-Retry-Num)
	// and a replay inside the window count once.
	for i := range 3 {
		req := signed(h.events.URL, "", event, time.Now(), secret)
		if i > 0 {
			req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(i))
			req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
		}
		if status, body := do(t, req); status != http.StatusOK {
			t.Fatalf("delivery %d: %d %s, want 200", i, status, body)
		}
	}
	got := h.get(r.ID)
	if want := []string{bob + ":approve:counted"}; got.Status != bot.Pending || !slices.Equal(votes(got), want) {
		t.Fatalf("after an event and 2 retries: %s with votes %v, want pending with %v", got.Status, votes(got), want)
	}
}

func httpBody(b []byte) *readCloser { return &readCloser{bytes.NewReader(b)} }

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func TestHTTPURLVerification(t *testing.T) {
	h := newHarness(t, ownerPersona())
	status, body := h.postEvent(map[string]string{"token": "x", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"})
	if status != http.StatusOK {
		t.Fatalf("status = %d %s, want 200", status, body)
	}
	var got struct{ Challenge string }
	if err := json.Unmarshal([]byte(body), &got); err != nil || got.Challenge != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Fatalf("body = %s (%v), want the challenge echoed", body, err)
	}
	// An unsigned challenge is refused like anything else.
	req, _ := http.NewRequest(http.MethodPost, h.events.URL, strings.NewReader(`{"type":"url_verification","challenge":"x"}`))
	if status, _ := do(t, req); status != http.StatusUnauthorized {
		t.Fatalf("unsigned challenge: %d, want 401", status)
	}
}

func TestHTTPInteractions(t *testing.T) {
	h := newHarness(t, quorumPersona())
	r, post := h.submit("curl https://x.example | sh")

	t.Run("stranger is told why", func(t *testing.T) {
		status, body := h.postClick(slackfake.BlockActions(stranger, channelID, post.TS, "signoff_approve", r.ID, "1700000020.000001", h.fake.ResponseURL("s")))
		if status != http.StatusOK {
			t.Fatalf("status = %d %s, want 200", status, body)
		}
		eph, err := h.fake.Next(h.ctx(), "chat.postEphemeral")
		if err != nil {
			t.Fatal(err)
		}
		if eph.User != stranger || !strings.HasPrefix(eph.Text, "Your vote was not counted: ") {
			t.Errorf("ephemeral to %s: %q", eph.User, eph.Text)
		}
	})
	t.Run("unsigned click is refused", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, h.clicks.URL, bytes.NewReader(formBody(slackfake.BlockActions(bob, channelID, post.TS, "signoff_approve", r.ID, "1700000020.000002", ""))))
		if status, _ := do(t, req); status != http.StatusUnauthorized {
			t.Fatalf("status = %d, want 401", status)
		}
	})
	t.Run("signed form without payload", func(t *testing.T) {
		if status, _ := do(t, signed(h.clicks.URL, "", []byte("foo=bar"), time.Now(), secret)); status != http.StatusBadRequest {
			t.Fatalf("status = %d, want 400", status)
		}
	})
	t.Run("signed payload that is not JSON", func(t *testing.T) {
		if status, _ := do(t, signed(h.clicks.URL, "", []byte("payload=%7Bnot+json"), time.Now(), secret)); status != http.StatusBadRequest {
			t.Fatalf("status = %d, want 400", status)
		}
	})
	t.Run("GET is not allowed", func(t *testing.T) {
		res, err := http.Get(h.clicks.URL)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("status = %d, want 405", res.StatusCode)
		}
	})
	got := h.get(r.ID)
	if want := []string{stranger + ":approve:ignored"}; got.Status != bot.Pending || !slices.Equal(votes(got), want) {
		t.Fatalf("%s with votes %v, want pending with %v", got.Status, votes(got), want)
	}
}

// With only a signing secret the endpoints work; clicks are answered
// through the interaction's response_url, as there is no bot token.
func TestHTTPSigningSecretOnly(t *testing.T) {
	h := newHarness(t, ownerPersona(), noBotToken)
	// Nothing can be posted without a bot token: the gateway fails closed.
	r := h.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "ls"})
	if r.Status != bot.Denied {
		t.Fatalf("request without a postable channel is %s, want denied", r.Status)
	}
	status, _ := h.postClick(slackfake.BlockActions(alice, channelID, "1700000030.000001", "signoff_approve", r.ID, "1700000030.000002", h.fake.ResponseURL("late")))
	if status != http.StatusOK {
		t.Fatalf("status = %d, want 200", status)
	}
	res, err := h.fake.Next(h.ctx(), "response_url")
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Text         string `json:"text"`
		ResponseType string `json:"response_type"`
	}
	json.Unmarshal(res.Body, &msg)
	if msg.ResponseType != "ephemeral" || !strings.HasPrefix(msg.Text, "already decided: ❌ denied") {
		t.Errorf("response_url got %s, want an ephemeral 'already decided: ❌ denied…'", res.Body)
	}
}

func TestHTTPOffWithoutSigningSecret(t *testing.T) {
	a, err := slack.New(slack.Config{BotToken: slackfake.BotToken}, sinkFunc(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, hd := range []http.Handler{a.EventsHandler(), a.InteractionsHandler()} {
		rec := httptest.NewRecorder()
		hd.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/slack/events", strings.NewReader("{}")))
		if rec.Code != http.StatusNotFound {
			t.Errorf("status = %d, want 404", rec.Code)
		}
	}
}

// sinkFunc is a VoteSink for the few tests that need one that fails.
type sinkFunc func(context.Context, bot.Ballot) (bot.VoteOutcome, error)

func (f sinkFunc) CastVote(ctx context.Context, b bot.Ballot) (bot.VoteOutcome, error) {
	return f(ctx, b)
}

// A store that cannot be reached: the event is answered 503 so Slack
// redelivers it; a click is answered 200 and the clicker is told to retry.
func TestHTTPStoreUnavailable(t *testing.T) {
	fake := slackfake.New(t)
	down := sinkFunc(func(context.Context, bot.Ballot) (bot.VoteOutcome, error) {
		return bot.VoteOutcome{}, bot.Errorf(bot.EUnavailable, "store: connection refused")
	})
	a, err := slack.New(slack.Config{BotToken: slackfake.BotToken, SigningSecret: secret, APIURL: fake.APIURL, Logger: testLogger()}, down)
	if err != nil {
		t.Fatal(err)
	}
	events := httptest.NewServer(a.EventsHandler())
	defer events.Close()
	clicks := httptest.NewServer(a.InteractionsHandler())
	defer clicks.Close()

	ev := mustJSON(slackfake.ReactionEvent("EvU", "reaction_added", alice, "white_check_mark", channelID, "1700000040.000001"))
	if status, body := do(t, signed(events.URL, "", ev, time.Now(), secret)); status != http.StatusServiceUnavailable {
		t.Fatalf("event with the store down: %d %s, want 503", status, body)
	}
	click := formBody(slackfake.BlockActions(alice, channelID, "1700000040.000001", "signoff_approve", "req1", "1700000040.000002", ""))
	if status, body := do(t, signed(clicks.URL, "", click, time.Now(), secret)); status != http.StatusOK {
		t.Fatalf("click with the store down: %d %s, want 200", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	eph, err := fake.Next(ctx, "chat.postEphemeral")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(eph.Text, "try again") {
		t.Errorf("ephemeral = %q, want a 'try again'", eph.Text)
	}
}

func TestBallotsCarryEvidence(t *testing.T) {
	ballots := make(chan bot.Ballot, 2)
	sink := sinkFunc(func(_ context.Context, b bot.Ballot) (bot.VoteOutcome, error) {
		ballots <- b
		return bot.VoteOutcome{RequestID: "req1", Result: bot.Counted, Status: bot.Pending}, nil
	})
	a, err := slack.New(slack.Config{SigningSecret: secret, Logger: testLogger()}, sink)
	if err != nil {
		t.Fatal(err)
	}
	ev := mustJSON(slackfake.ReactionEvent("EvE1", "reaction_added", alice, "x", channelID, "1700000050.000001"))
	req := httptest.NewRequest(http.MethodPost, "/slack/events", bytes.NewReader(ev))
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	sig := signing.SignSlack(secret, stamp, ev)
	req.Header.Set(signing.SlackTimestampHeader, stamp)
	req.Header.Set(signing.SlackSignatureHeader, sig)
	req.Header.Set("X-Slack-Retry-Num", "2")
	rec := httptest.NewRecorder()
	a.EventsHandler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d %s", rec.Code, rec.Body)
	}
	b := <-ballots
	want := bot.Ballot{
		Ref:      bot.MessageRef{Platform: bot.Slack, Channel: channelID, ID: "1700000050.000001"},
		Voter:    bot.Identity{Platform: bot.Slack, ID: alice},
		Choice:   bot.Deny,
		Proof:    bot.ProofPlatform,
		DedupKey: "slack:EvE1",
	}
	gotNoEvidence := b
	gotNoEvidence.Evidence = nil
	if gotNoEvidence.RequestID != want.RequestID || gotNoEvidence.Ref != want.Ref || gotNoEvidence.Voter != want.Voter ||
		gotNoEvidence.Choice != want.Choice || gotNoEvidence.Proof != want.Proof || gotNoEvidence.DedupKey != want.DedupKey {
		t.Errorf("ballot = %+v, want %+v", gotNoEvidence, want)
	}
	var evidence struct {
		Transport string            `json:"transport"`
		Headers   map[string]string `json:"headers"`
		Body      string            `json:"body"`
	}
	if err := json.Unmarshal(b.Evidence, &evidence); err != nil {
		t.Fatalf("evidence is not JSON: %v", err)
	}
	if evidence.Transport != "http" || evidence.Body != string(ev) || evidence.Headers[signing.SlackSignatureHeader] != sig ||
		evidence.Headers[signing.SlackTimestampHeader] != stamp || evidence.Headers["X-Slack-Retry-Num"] != "2" {
		t.Errorf("evidence = %s", b.Evidence)
	}
	// The evidence verifies again offline, as the audit log's reader would.
	h := http.Header{}
	for k, v := range evidence.Headers {
		h.Set(k, v)
	}
	if err := signing.VerifySlack(h, []byte(evidence.Body), secret, time.Now()); err != nil {
		t.Errorf("evidence does not re-verify: %v", err)
	}

	// A click names its request by the button's value.
	click := formBody(slackfake.BlockActions(bob, channelID, "1700000050.000001", "signoff_deny", "req1", "1700000050.000009", ""))
	req = httptest.NewRequest(http.MethodPost, "/slack/interactions", bytes.NewReader(click))
	req.Header.Set(signing.SlackTimestampHeader, stamp)
	req.Header.Set(signing.SlackSignatureHeader, signing.SignSlack(secret, stamp, click))
	rec = httptest.NewRecorder()
	a.InteractionsHandler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("click status = %d %s", rec.Code, rec.Body)
	}
	b = <-ballots
	if b.RequestID != "req1" || b.Choice != bot.Deny || b.Voter.ID != bob || b.DedupKey != "slack:action:1700000050.000009:"+bob || b.Proof != bot.ProofPlatform {
		t.Errorf("click ballot = %+v", b)
	}
}

func TestPostAndUpdateErrors(t *testing.T) {
	fake := slackfake.New(t)
	a, err := slack.New(slack.Config{BotToken: slackfake.BotToken, APIURL: fake.APIURL, Logger: testLogger()}, sinkFunc(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := &bot.Request{ID: "req1", Action: "ls", Status: bot.Approved, DecidedBy: []string{"alice"}}
	c := bot.ChannelConfig{Platform: bot.Slack, Target: channelID}

	fake.Fail("chat.postMessage", "channel_not_found")
	if _, err := a.Post(ctx, r, bot.Persona{Name: "demo"}, c); err == nil || !strings.Contains(err.Error(), "channel_not_found") {
		t.Errorf("Post to a missing channel = %v, want channel_not_found", err)
	}
	if _, err := a.Post(ctx, r, bot.Persona{Name: "demo"}, bot.ChannelConfig{Platform: bot.Slack}); err == nil {
		t.Error("Post without a channel id succeeded")
	}
	// A failed reaction does not fail the post.
	fake.Fail("reactions.add", "too_many_reactions")
	refs, err := a.Post(ctx, r, bot.Persona{Name: "demo"}, c)
	if err != nil || len(refs) != 1 || refs[0].Platform != bot.Slack || refs[0].Channel != channelID || refs[0].ID == "" {
		t.Fatalf("Post = %+v, %v", refs, err)
	}

	two := append(refs, bot.MessageRef{Platform: bot.Slack, Channel: "COTHER", ID: "1700000060.000001"})
	fake.Fail("chat.update", "message_not_found")
	err = a.Update(ctx, r, two)
	if err == nil || !strings.Contains(err.Error(), "message_not_found") {
		t.Fatalf("Update with a failing edit = %v, want message_not_found", err)
	}
	// The other card was still edited.
	if up, err := fake.Next(ctx, "chat.update"); err != nil || up.Channel != "COTHER" {
		t.Fatalf("second card: %+v, %v", up, err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	sink := sinkFunc(nil)
	tests := []struct {
		name string
		cfg  slack.Config
	}{
		{"nothing set", slack.Config{}},
		{"app token as bot token", slack.Config{BotToken: "xapp-1"}},
		{"bot token as app token", slack.Config{AppToken: "xoxb-1"}},
		{"API URL without trailing slash", slack.Config{BotToken: "xoxb-1", APIURL: "http://127.0.0.1:1/api"}},
		{"relative API URL", slack.Config{BotToken: "xoxb-1", APIURL: "/api/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := slack.New(tt.cfg, sink); err == nil {
				t.Fatal("New succeeded, want an error")
			}
		})
	}
	if _, err := slack.New(slack.Config{SigningSecret: "s"}, nil); err == nil {
		t.Error("New without a sink succeeded")
	}
}

func TestConfigLogValueRedacts(t *testing.T) {
	cfg := slack.Config{BotToken: "xoxb-secret-bot", AppToken: "xapp-secret-app", SigningSecret: "secret-signing"}
	var buf bytes.Buffer
	log := slogJSON(&buf)
	log.Info("config", "slack", cfg)
	out := buf.String() + cfg.String()
	for _, s := range []string{"xoxb-secret-bot", "xapp-secret-app", "secret-signing"} {
		if strings.Contains(out, s) {
			t.Errorf("log shows %q: %s", s, out)
		}
	}
	if !strings.Contains(buf.String(), `"bot_token":"set"`) {
		t.Errorf("log does not say the bot token is set: %s", buf.String())
	}
}

// A reaction can reach signoff before the gateway has recorded the card it
// answers (Post has not returned yet). On the bot's own message from the
// last minute that is answered 503, so Slack redelivers it; on an old or
// someone else's message it is simply not a vote.
func TestHTTPReactionToUnrecordedCard(t *testing.T) {
	h := newHarness(t, ownerPersona())
	fresh := strconv.FormatInt(time.Now().Unix(), 10) + ".000001"
	ev := slackfake.ReactionEvent("EvF1", "reaction_added", alice, "white_check_mark", channelID, fresh)
	if status, body := h.postEvent(ev); status != http.StatusServiceUnavailable {
		t.Errorf("fresh bot message: %d %s, want 503", status, body)
	}
	old := slackfake.ReactionEvent("EvF2", "reaction_added", alice, "white_check_mark", channelID, "1600000000.000001")
	if status, body := h.postEvent(old); status != http.StatusOK {
		t.Errorf("old message: %d %s, want 200", status, body)
	}
	other := slackfake.ReactionEvent("EvF3", "reaction_added", alice, "white_check_mark", channelID, fresh)
	other["event"].(map[string]any)["item_user"] = bob
	if status, body := h.postEvent(other); status != http.StatusOK {
		t.Errorf("someone else's message: %d %s, want 200", status, body)
	}
}
