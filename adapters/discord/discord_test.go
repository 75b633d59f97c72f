package discord_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/adapters/discord"
	"github.com/signoff/signoff/adapters/discord/discordfake"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/signing"
)

// Discord user ids of the people in the test persona.
const (
	alice    = "100000000000000001" // owner
	bob      = "100000000000000002" // member
	carol    = "100000000000000003" // member
	agentID  = "100000000000000009" // the agent's own account
	stranger = "100000000000000666"
	channel  = "500000000000000001"
)

func persona(quorum int) bot.Persona {
	return bot.Persona{
		Name:  "demo",
		Agent: []bot.Identity{{Platform: bot.Discord, ID: agentID}},
		Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{{Platform: bot.Discord, ID: alice}}},
		Members: []bot.Person{
			{Name: "bob", Identities: []bot.Identity{{Platform: bot.Discord, ID: bob}}},
			{Name: "carol", Identities: []bot.Identity{{Platform: bot.Discord, ID: carol}}},
		},
		ApprovalQuorum: quorum,
		Proof:          bot.ProofAny,
		Timeout:        time.Minute,
		Channels:       []bot.ChannelConfig{{Platform: bot.Discord, Target: channel}},
	}
}

// cast is one ballot the adapter handed to the real gateway, and what the
// gateway answered.
type cast struct {
	b   bot.Ballot
	out bot.VoteOutcome
	err error
}

// observed passes every ballot to the real gateway unchanged and lets a
// test wait for what came back, instead of sleeping.
type observed struct {
	sink    bot.VoteSink
	mu      sync.Mutex
	casts   []cast
	changed chan struct{}
}

func (o *observed) CastVote(ctx context.Context, b bot.Ballot) (bot.VoteOutcome, error) {
	out, err := o.sink.CastVote(ctx, b)
	o.mu.Lock()
	o.casts = append(o.casts, cast{b, out, err})
	close(o.changed)
	o.changed = make(chan struct{})
	o.mu.Unlock()
	return out, err
}

// wait returns the first cast matching pred, failing the test after 10s.
func (o *observed) wait(t *testing.T, what string, pred func(cast) bool) cast {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		o.mu.Lock()
		for _, c := range o.casts {
			if pred(c) {
				o.mu.Unlock()
				return c
			}
		}
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("no ballot %s after 10s; got %+v", what, o.all())
		}
	}
}

func (o *observed) all() []cast {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]cast(nil), o.casts...)
}

func (o *observed) count(pred func(cast) bool) int {
	n := 0
	for _, c := range o.all() {
		if pred(c) {
			n++
		}
	}
	return n
}

func from(user string) func(cast) bool {
	return func(c cast) bool { return c.b.Voter.ID == user }
}

type harness struct {
	fake  *discordfake.Server
	env   *bottest.Env
	a     *discord.Adapter
	sink  *observed
	priv  ed25519.PrivateKey
	clock *clock
}

// clock is the adapter's clock: real time unless a test moves it.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// start runs the real gateway on the real store with the adapter as its
// Discord channel, the adapter against a fake Discord, and (unless
// noGateway) its gateway connection.
func start(t *testing.T, p bot.Persona, noGateway bool) *harness {
	t.Helper()
	fake := discordfake.New(t)
	channels := map[bot.Platform]bot.Channel{}
	env := bottest.New(t, p, channels)
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{fake: fake, env: env, sink: &observed{sink: env.Gateway, changed: make(chan struct{})}, priv: priv, clock: &clock{}}
	a, err := discord.New(discord.Config{
		BotToken:     strings.TrimPrefix(fake.Token, "Bot "),
		AppID:        fake.AppID,
		PublicKey:    hex.EncodeToString(pub),
		APIURL:       fake.URL,
		Logger:       testLogger(),
		Now:          h.clock.Now,
		ReconnectMin: 20 * time.Millisecond,
		ReconnectMax: 200 * time.Millisecond,
		Pending: func(ctx context.Context) ([]*bot.Request, error) {
			return env.Gateway.List(ctx, bot.Filter{Status: bot.Pending})
		},
	}, h.sink)
	if err != nil {
		t.Fatal(err)
	}
	h.a = a
	channels[bot.Discord] = a // before any Submit: the gateway reads it only then
	if noGateway {
		return h
	}
	// The fake's READY says a connection is up, but Run then reads the
	// reactions on pending messages: a test that reacts before that read
	// is over could see it counted by the first connect's catch-up rather
	// than the one it means to test. start returns once it is over.
	caughtUp := make(chan struct{}, 16)
	a.OnCaughtUp(func() {
		select {
		case caughtUp <- struct{}{}:
		default:
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v, want nil after cancel", err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("Run did not return 15s after cancel")
		}
	})
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := fake.WaitConnected(wctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-caughtUp:
	case <-wctx.Done():
		t.Fatal("the adapter did not finish reading reactions after its first connect")
	}
	return h
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// submit asks for approval and returns the request and its Discord message,
// once the bot's own ✅ ❌ are on it.
func (h *harness) submit(t *testing.T, action string) (*bot.Request, bot.MessageRef) {
	t.Helper()
	r := h.env.Submit(t, bot.NewRequest{Persona: "demo", Action: action, Reason: "clean the build dir"})
	if r.Status != bot.Pending {
		t.Fatalf("submitted request is %s (%s), want pending", r.Status, r.DecisionReason)
	}
	var ref bot.MessageRef
	for _, m := range r.Messages {
		if m.Platform == bot.Discord {
			ref = m
		}
	}
	if ref.ID == "" || ref.Channel != channel {
		t.Fatalf("request messages = %+v, want one in Discord channel %s", r.Messages, channel)
	}
	ctx := ctx10(t)
	for _, e := range []string{"✅", "❌"} {
		if err := h.fake.WaitReactions(ctx, ref.ID, e, 1); err != nil {
			t.Fatal(err)
		}
	}
	return r, ref
}

func (h *harness) react(t *testing.T, ref bot.MessageRef, user, emoji string) {
	t.Helper()
	delivered, err := h.fake.React(ref.Channel, ref.ID, user, emoji)
	if err != nil || !delivered {
		t.Fatalf("react %s by %s: delivered %v, err %v", emoji, user, delivered, err)
	}
}

// click clicks a button over the gateway and returns the ephemeral reply.
func (h *harness) click(t *testing.T, ref bot.MessageRef, user string, c bot.Choice, id string) reply {
	t.Helper()
	iid, delivered := h.fake.Click(ref.Channel, ref.ID, user, "signoff:"+string(c)+":"+id)
	if !delivered {
		t.Fatalf("click by %s not delivered", user)
	}
	cb, err := h.fake.WaitCallback(ctx10(t), iid)
	if err != nil {
		t.Fatal(err)
	}
	return parseReply(t, cb.Body)
}

type reply struct {
	Type int `json:"type"`
	Data struct {
		Content string `json:"content"`
		Flags   int    `json:"flags"`
	} `json:"data"`
}

func parseReply(t *testing.T, b []byte) reply {
	t.Helper()
	var r reply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("reply %s: %v", b, err)
	}
	return r
}

func (r reply) ephemeral(t *testing.T, want string) {
	t.Helper()
	if r.Type != 4 || r.Data.Flags != 64 {
		t.Errorf("reply type %d flags %d, want an ephemeral message (4, 64)", r.Type, r.Data.Flags)
	}
	if !strings.Contains(r.Data.Content, want) {
		t.Errorf("reply %q, want it to contain %q", r.Data.Content, want)
	}
}

// card is the part of a message body the tests read.
type card struct {
	Content string `json:"content"`
	Embeds  []struct {
		Title       string `json:"title"`
		Description string `json:"description"`
		Fields      []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"fields"`
	} `json:"embeds"`
	Components      *[]json.RawMessage `json:"components"`
	AllowedMentions *struct {
		Parse []string `json:"parse"`
		Users []string `json:"users"`
	} `json:"allowed_mentions"`
}

func (c card) field(name string) string {
	for _, e := range c.Embeds {
		for _, f := range e.Fields {
			if f.Name == name {
				return f.Value
			}
		}
	}
	return ""
}

func parseCard(t *testing.T, b []byte) card {
	t.Helper()
	var c card
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("message body %s: %v", b, err)
	}
	return c
}

func TestOwnerApprovesByReaction(t *testing.T) {
	h := start(t, persona(0), false)
	r, ref := h.submit(t, "rm -rf /tmp/build")

	posts := h.fake.Posts()
	if len(posts) != 1 {
		t.Fatalf("%d messages posted, want 1", len(posts))
	}
	var pretty bytes.Buffer
	json.Indent(&pretty, posts[0].Body, "", "  ")
	t.Logf("posted message:\n%s", pretty.String())
	c := parseCard(t, posts[0].Body)
	if want := bot.Headline(r) + "\n" + bot.HowToAnswer; c.Content != want {
		t.Errorf("content = %q, want %q", c.Content, want)
	}
	if len(c.Embeds) != 1 || !strings.Contains(c.Embeds[0].Description, "rm -rf /tmp/build") {
		t.Errorf("embeds = %+v, want one showing the action", c.Embeds)
	}
	for name, want := range map[string]string{"Reason": "clean the build dir", "Risk": "dangerous", "Persona": "demo", "Deadline": r.Deadline.UTC().Format(time.RFC3339), "Request": r.ID} {
		if got := c.field(name); !strings.Contains(got, want) {
			t.Errorf("embed field %s = %q, want it to contain %q", name, got, want)
		}
	}
	if c.Components == nil || !strings.Contains(string(posts[0].Body), `"custom_id":"signoff:approve:`+r.ID+`"`) ||
		!strings.Contains(string(posts[0].Body), `"custom_id":"signoff:deny:`+r.ID+`"`) {
		t.Errorf("components = %s, want Approve and Deny buttons for %s", posts[0].Body, r.ID)
	}
	if c.AllowedMentions == nil || len(c.AllowedMentions.Parse) != 0 {
		t.Errorf("allowed_mentions = %+v, want none", c.AllowedMentions)
	}

	h.react(t, ref, alice, "✅")
	got := h.env.Await(t, r.ID)
	if got.Status != bot.Approved || strings.Join(got.DecidedBy, ",") != "alice" {
		t.Fatalf("request = %s by %v, want approved by alice", got.Status, got.DecidedBy)
	}
	var counted []bot.Vote
	for _, v := range got.Votes {
		if v.Voter.ID == h.fake.BotID {
			t.Errorf("the bot's own reaction became a vote: %+v", v)
		}
		if v.Result == bot.Counted {
			counted = append(counted, v)
		}
	}
	if len(counted) != 1 || counted[0].Voter != (bot.Identity{Platform: bot.Discord, ID: alice}) || counted[0].Proof != bot.ProofPlatform {
		t.Errorf("counted votes = %+v, want alice's, vouched for by the platform", counted)
	}
	c0 := h.sink.wait(t, "from alice", from(alice))
	if c0.b.DedupKey != "discord:react:"+ref.ID+":"+alice+":✅" {
		t.Errorf("DedupKey = %q", c0.b.DedupKey)
	}
	var ev struct {
		Via     string          `json:"via"`
		Event   string          `json:"event"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(c0.b.Evidence, &ev); err != nil || ev.Via != "gateway" || ev.Event != "MESSAGE_REACTION_ADD" || !strings.Contains(string(ev.Payload), alice) {
		t.Errorf("evidence = %s (%v), want the raw gateway payload", c0.b.Evidence, err)
	}

	// The message is edited: outcome first, who and when, no buttons.
	edit, err := h.fake.WaitEdit(ctx10(t), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	pretty.Reset()
	json.Indent(&pretty, edit.Body, "", "  ")
	t.Logf("edited message:\n%s", pretty.String())
	ec := parseCard(t, edit.Body)
	if want := bot.Outcome(got); !strings.HasPrefix(ec.Content, bot.Headline(r)+"\n"+want) {
		t.Errorf("edited content = %q, want the headline then %q", ec.Content, want)
	}
	if !strings.Contains(ec.Content, "✅ approved by alice at ") {
		t.Errorf("edited content = %q, want who and when", ec.Content)
	}
	if ec.Components == nil || len(*ec.Components) != 0 {
		t.Errorf("edited components = %v, want an empty list (buttons removed)", ec.Components)
	}
	if got := ec.field("Decided by"); got != "alice" {
		t.Errorf("Decided by = %q, want alice", got)
	}
	if got := ec.field("Decided at"); !strings.Contains(got, got) || got == "" {
		t.Errorf("Decided at = %q", got)
	}
}

func TestQuorumByButtonAndReaction(t *testing.T) {
	h := start(t, persona(2), false)
	r, ref := h.submit(t, "terraform apply")

	h.click(t, ref, bob, bot.Approve, r.ID).ephemeral(t, "Your vote to approve was counted. Waiting for more votes.")
	if got, _ := h.env.Gateway.Get(context.Background(), r.ID); got.Status != bot.Pending {
		t.Fatalf("after one member: %s, want pending", got.Status)
	}
	c := h.sink.wait(t, "from bob", from(bob))
	if !strings.HasPrefix(c.b.DedupKey, "discord:interaction:") || c.b.RequestID != r.ID || c.b.Proof != bot.ProofPlatform {
		t.Errorf("click ballot = %+v", c.b)
	}

	h.react(t, ref, carol, "✅")
	got := h.env.Await(t, r.ID)
	if got.Status != bot.Approved || strings.Join(got.DecidedBy, ",") != "bob,carol" {
		t.Fatalf("request = %s by %v, want approved by bob, carol", got.Status, got.DecidedBy)
	}
	edit, err := h.fake.WaitEdit(ctx10(t), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ec := parseCard(t, edit.Body); !strings.Contains(ec.Content, "✅ approved by bob, carol") {
		t.Errorf("edited content = %q", ec.Content)
	}
}

func TestAgentOwnUserIsIgnored(t *testing.T) {
	h := start(t, persona(0), false)
	r, ref := h.submit(t, "git push --force")

	h.react(t, ref, agentID, "✅")
	c := h.sink.wait(t, "from the agent", from(agentID))
	if c.err != nil || c.out.Result != bot.Ignored || c.out.Status != bot.Pending {
		t.Fatalf("agent's reaction: %+v %v, want ignored and still pending", c.out, c.err)
	}
	h.click(t, ref, agentID, bot.Approve, r.ID).ephemeral(t, "Your vote was not counted: ")

	h.react(t, ref, alice, "❌")
	got := h.env.Await(t, r.ID)
	if got.Status != bot.Denied || strings.Join(got.DecidedBy, ",") != "alice" {
		t.Fatalf("request = %s by %v, want denied by alice", got.Status, got.DecidedBy)
	}
	edit, err := h.fake.WaitEdit(ctx10(t), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ec := parseCard(t, edit.Body); !strings.Contains(ec.Content, "❌ denied by alice") {
		t.Errorf("edited content = %q", ec.Content)
	}
}

func TestStrangerGetsEphemeralReply(t *testing.T) {
	h := start(t, persona(0), false)
	r, ref := h.submit(t, "npm publish")

	rep := h.click(t, ref, stranger, bot.Approve, r.ID)
	rep.ephemeral(t, "Your vote was not counted: ")
	c := h.sink.wait(t, "from the stranger", from(stranger))
	if c.out.Result != bot.Ignored || !strings.Contains(rep.Data.Content, c.out.Reason) {
		t.Errorf("stranger's click: %+v, reply %q: want ignored with the reason said", c.out, rep.Data.Content)
	}
	// Another emoji from a member: recorded, ignored, not a decision.
	h.react(t, ref, bob, "🎉")
	c = h.sink.wait(t, "🎉 from bob", from(bob))
	if c.b.Choice != bot.Other || c.out.Result != bot.Ignored {
		t.Errorf("🎉: choice %s result %s, want other, ignored", c.b.Choice, c.out.Result)
	}
	if got, _ := h.env.Gateway.Get(context.Background(), r.ID); got.Status != bot.Pending {
		t.Fatalf("after a stranger and a 🎉: %s, want pending", got.Status)
	}
}

func TestDoubleClickCountsOnce(t *testing.T) {
	h := start(t, persona(2), false)
	r, ref := h.submit(t, "DROP TABLE users")

	h.click(t, ref, bob, bot.Approve, r.ID).ephemeral(t, "was counted")
	h.click(t, ref, bob, bot.Approve, r.ID).ephemeral(t, "already voted")
	got, err := h.env.Gateway.Get(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	counted := 0
	for _, v := range got.Votes {
		if v.Result == bot.Counted {
			counted++
		}
	}
	if got.Status != bot.Pending || counted != 1 {
		t.Fatalf("after bob's double click: %s with %d counted votes, want pending with 1", got.Status, counted)
	}
}

func TestReactionAfterDecisionIsIgnored(t *testing.T) {
	h := start(t, persona(0), false)
	r, ref := h.submit(t, "sudo reboot")
	h.react(t, ref, alice, "✅")
	if got := h.env.Await(t, r.ID); got.Status != bot.Approved {
		t.Fatalf("request = %s, want approved", got.Status)
	}
	h.react(t, ref, bob, "❌")
	c := h.sink.wait(t, "from bob", from(bob))
	if c.err != nil || c.out.Result != bot.Ignored || c.out.Status != bot.Approved {
		t.Fatalf("late ❌: %+v %v, want ignored, still approved", c.out, c.err)
	}
	// A click after the decision gets told why.
	h.click(t, ref, carol, bot.Deny, r.ID).ephemeral(t, "already decided")
	if got, _ := h.env.Gateway.Get(context.Background(), r.ID); got.Status != bot.Approved {
		t.Fatalf("after late answers: %s, want approved", got.Status)
	}
}

func TestReactionsWhileDisconnectedAreReadOnReconnect(t *testing.T) {
	h := start(t, persona(2), false)
	r, ref := h.submit(t, "kubectl delete ns prod")
	h.react(t, ref, bob, "✅")
	h.sink.wait(t, "from bob", from(bob))

	h.fake.Drop()
	if err := h.fake.ReactUnseen(ref.Channel, ref.ID, carol, "✅"); err != nil {
		t.Fatal(err)
	}
	h.fake.Allow()

	got := h.env.Await(t, r.ID)
	if got.Status != bot.Approved || strings.Join(got.DecidedBy, ",") != "bob,carol" {
		t.Fatalf("request = %s by %v, want approved by bob, carol", got.Status, got.DecidedBy)
	}
	if _, resumes := h.fake.Sessions(); resumes < 1 {
		t.Errorf("the client did not RESUME its session")
	}
	c := h.sink.wait(t, "from carol", from(carol))
	if c.b.DedupKey != "discord:react:"+ref.ID+":"+carol+":✅" {
		t.Errorf("re-read reaction DedupKey = %q, want the same as a gateway event's", c.b.DedupKey)
	}
	// Bob's reaction was read again and deduplicated, never counted twice.
	counted := 0
	for _, v := range got.Votes {
		if v.Voter.ID == bob && v.Result == bot.Counted {
			counted++
		}
		if v.Voter.ID == h.fake.BotID {
			t.Errorf("the bot's own reaction became a vote: %+v", v)
		}
	}
	if counted != 1 {
		t.Errorf("bob counted %d times, want 1", counted)
	}
	if _, err := h.fake.WaitEdit(ctx10(t), ref.ID); err != nil {
		t.Fatal(err)
	}
}

func TestExpiredRequestIsEdited(t *testing.T) {
	h := start(t, persona(0), false)
	r := h.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "rm -rf ~", Timeout: bot.Duration(time.Second)})
	got := h.env.Await(t, r.ID)
	if got.Status != bot.Expired {
		t.Fatalf("request = %s, want expired", got.Status)
	}
	var ref bot.MessageRef
	for _, m := range got.Messages {
		if m.Platform == bot.Discord {
			ref = m
		}
	}
	edit, err := h.fake.WaitEdit(ctx10(t), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	ec := parseCard(t, edit.Body)
	if !strings.Contains(ec.Content, "⌛ expired") || ec.Components == nil || len(*ec.Components) != 0 {
		t.Errorf("edited = %s, want ⌛ expired and no buttons", edit.Body)
	}
}

func TestPostToUnknownChannelDenies(t *testing.T) {
	h := start(t, persona(0), true)
	h.fake.FailChannel(channel)
	r := h.env.Submit(t, bot.NewRequest{Persona: "demo", Action: "rm -rf /"})
	if r.Status != bot.Denied || !strings.Contains(r.DecisionReason, "discord") || !strings.Contains(r.DecisionReason, "Unknown Channel") {
		t.Fatalf("request = %s (%s), want denied because Discord refused the post", r.Status, r.DecisionReason)
	}
}

// --- the HTTP interactions endpoint ---------------------------------------

func (h *harness) signed(t *testing.T, body []byte, at time.Time) *http.Request {
	t.Helper()
	ts := strconv.FormatInt(at.Unix(), 10)
	req := httptest.NewRequest(http.MethodPost, "/discord/interactions", bytes.NewReader(body))
	req.Header.Set(signing.DiscordTimestampHeader, ts)
	req.Header.Set(signing.DiscordSignatureHeader, signing.SignDiscord(h.priv, ts, body))
	return req
}

func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestInteractionsEndpoint(t *testing.T) {
	h := start(t, persona(2), true)
	r, ref := h.submit(t, "git reset --hard")
	handler := h.a.InteractionsHandler()
	click := discordfake.InteractionPayload(h.fake.AppID, "990000000000000001", "tok", ref.Channel, ref.ID, bob, "signoff:approve:"+r.ID)
	_, otherKey, _ := ed25519.GenerateKey(nil)

	t.Run("ping", func(t *testing.T) {
		w := serve(handler, h.signed(t, []byte(`{"type":1,"id":"1","application_id":"`+h.fake.AppID+`"}`), time.Now()))
		if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != `{"type":1}` {
			t.Fatalf("PING: %d %s, want 200 {\"type\":1}", w.Code, w.Body)
		}
	})
	refusals := []struct {
		name   string
		req    func() *http.Request
		status int
		code   string
	}{
		{"bad signature", func() *http.Request {
			req := h.signed(t, click, time.Now())
			ts := req.Header.Get(signing.DiscordTimestampHeader)
			req.Header.Set(signing.DiscordSignatureHeader, signing.SignDiscord(otherKey, ts, click))
			return req
		}, 401, bot.EUnauthorized},
		{"no signature", func() *http.Request {
			return httptest.NewRequest(http.MethodPost, "/discord/interactions", bytes.NewReader(click))
		}, 401, bot.EUnauthorized},
		{"tampered body", func() *http.Request {
			req := h.signed(t, click, time.Now())
			req.Body = io.NopCloser(bytes.NewReader(bytes.Replace(click, []byte(bob), []byte(alice), 1)))
			return req
		}, 401, bot.EUnauthorized},
		{"stale timestamp", func() *http.Request { return h.signed(t, click, time.Now().Add(-6*time.Minute)) }, 401, bot.EStale},
		{"future timestamp", func() *http.Request { return h.signed(t, click, time.Now().Add(6*time.Minute)) }, 401, bot.EStale},
		{"malformed JSON", func() *http.Request { return h.signed(t, []byte(`{"type":3,`), time.Now()) }, 400, bot.EInvalid},
		{"not UTF-8", func() *http.Request { return h.signed(t, []byte("{\"type\":3,\"id\":\"\xff\"}"), time.Now()) }, 400, bot.EInvalid},
		{"another application", func() *http.Request {
			return h.signed(t, discordfake.InteractionPayload("1", "2", "t", ref.Channel, ref.ID, alice, "signoff:approve:"+r.ID), time.Now())
		}, 400, bot.EInvalid},
		{"huge body", func() *http.Request {
			return h.signed(t, append(append([]byte(`{"type":3,"x":"`), bytes.Repeat([]byte("a"), 1<<20)...), `"}`...), time.Now())
		}, 413, bot.ETooLarge},
		{"GET", func() *http.Request { return httptest.NewRequest(http.MethodGet, "/discord/interactions", nil) }, 405, bot.EInvalid},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			w := serve(handler, tt.req())
			var e struct{ Error, Code string }
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != tt.status || e.Code != tt.code || e.Error == "" {
				t.Fatalf("%d %s, want %d with code %q", w.Code, w.Body, tt.status, tt.code)
			}
		})
	}
	if n := len(h.sink.all()); n != 0 {
		t.Fatalf("refused requests reached the gateway: %+v", h.sink.all())
	}

	t.Run("click counts, replay is recorded once", func(t *testing.T) {
		w := serve(handler, h.signed(t, click, time.Now()))
		if w.Code != http.StatusOK {
			t.Fatalf("click: %d %s", w.Code, w.Body)
		}
		parseReply(t, w.Body.Bytes()).ephemeral(t, "Your vote to approve was counted.")
		c := h.sink.wait(t, "from bob", from(bob))
		var ev struct{ Via, Signature, Timestamp, Body string }
		if err := json.Unmarshal(c.b.Evidence, &ev); err != nil || ev.Via != "http" || ev.Body != string(click) {
			t.Fatalf("evidence = %s, want the exact body and headers", c.b.Evidence)
		}
		// The evidence is enough to check the signature again offline.
		hdr := http.Header{}
		hdr.Set(signing.DiscordSignatureHeader, ev.Signature)
		hdr.Set(signing.DiscordTimestampHeader, ev.Timestamp)
		if err := signing.VerifyDiscord(hdr, []byte(ev.Body), h.priv.Public().(ed25519.PublicKey), time.Now()); err != nil {
			t.Errorf("evidence does not verify: %v", err)
		}

		w = serve(handler, h.signed(t, click, time.Now()))
		parseReply(t, w.Body.Bytes()).ephemeral(t, "already recorded")
		if n := h.sink.count(func(c cast) bool { return c.out.Result == bot.Counted }); n != 1 {
			t.Errorf("%d counted ballots, want 1", n)
		}
	})
	t.Run("stranger gets told why", func(t *testing.T) {
		body := discordfake.InteractionPayload(h.fake.AppID, "990000000000000002", "tok", ref.Channel, ref.ID, stranger, "signoff:deny:"+r.ID)
		w := serve(handler, h.signed(t, body, time.Now()))
		parseReply(t, w.Body.Bytes()).ephemeral(t, "Your vote was not counted: ")
	})
	t.Run("not our button", func(t *testing.T) {
		body := discordfake.InteractionPayload(h.fake.AppID, "990000000000000003", "tok", ref.Channel, ref.ID, carol, "other:thing")
		w := serve(handler, h.signed(t, body, time.Now()))
		parseReply(t, w.Body.Bytes()).ephemeral(t, "not one of signoff's")
	})
	t.Run("second member decides", func(t *testing.T) {
		body := discordfake.InteractionPayload(h.fake.AppID, "990000000000000004", "tok", ref.Channel, ref.ID, carol, "signoff:approve:"+r.ID)
		w := serve(handler, h.signed(t, body, time.Now()))
		parseReply(t, w.Body.Bytes()).ephemeral(t, "The request is now approved.")
		if got := h.env.Await(t, r.ID); got.Status != bot.Approved {
			t.Fatalf("request = %s, want approved", got.Status)
		}
		if _, err := h.fake.WaitEdit(ctx10(t), ref.ID); err != nil {
			t.Fatal(err)
		}
	})
}

func TestInteractionsOnlyWithPublicKey(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	a, err := discord.New(discord.Config{PublicKey: hex.EncodeToString(pub)}, discardSink{})
	if err != nil {
		t.Fatal(err)
	}
	if a.PostingEnabled() || !a.InteractionsEnabled() {
		t.Fatalf("enabled: posting %v interactions %v, want false true", a.PostingEnabled(), a.InteractionsEnabled())
	}
	if err := a.Run(context.Background()); !errors.Is(err, discord.ErrNoBotToken) {
		t.Errorf("Run = %v, want ErrNoBotToken", err)
	}
	if _, err := a.Post(context.Background(), &bot.Request{}, bot.Persona{}, bot.ChannelConfig{Platform: bot.Discord, Target: channel}); !errors.Is(err, discord.ErrNoBotToken) {
		t.Errorf("Post = %v, want ErrNoBotToken", err)
	}
	body := []byte(`{"type":1}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set(signing.DiscordTimestampHeader, ts)
	req.Header.Set(signing.DiscordSignatureHeader, signing.SignDiscord(priv, ts, body))
	if w := serve(a.InteractionsHandler(), req); w.Code != 200 || strings.TrimSpace(w.Body.String()) != `{"type":1}` {
		t.Errorf("PING: %d %s", w.Code, w.Body)
	}

	b, err := discord.New(discord.Config{BotToken: "x"}, discardSink{})
	if err != nil {
		t.Fatal(err)
	}
	if w := serve(b.InteractionsHandler(), httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"type":1}`))); w.Code != http.StatusServiceUnavailable {
		t.Errorf("no public key: %d, want 503", w.Code)
	}
}

type discardSink struct{}

func (discardSink) CastVote(context.Context, bot.Ballot) (bot.VoteOutcome, error) {
	return bot.VoteOutcome{}, errors.New("not expected")
}

func TestNewRefusesBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  discord.Config
	}{
		{"nothing", discord.Config{}},
		{"bad key", discord.Config{PublicKey: "abc"}},
		{"bad API URL", discord.Config{BotToken: "x", APIURL: "ftp://example.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := discord.New(tt.cfg, discardSink{}); err == nil {
				t.Fatal("New = nil error")
			}
		})
	}
	if _, err := discord.New(discord.Config{BotToken: "x"}, nil); err == nil {
		t.Fatal("New without a sink = nil error")
	}
}

func TestRunStopsOnRefusedToken(t *testing.T) {
	fake := discordfake.New(t)
	a, err := discord.New(discord.Config{BotToken: "wrong", APIURL: fake.URL, Logger: testLogger(), ReconnectMin: 10 * time.Millisecond}, discardSink{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Run(ctx); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Run = %v, want the token refused", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Run waited for the deadline instead of giving up on a refused token")
	}
}

func TestRunTwiceIsRefused(t *testing.T) {
	h := start(t, persona(0), false)
	if err := h.a.Run(context.Background()); err == nil {
		t.Fatal("a second Run = nil, want an error")
	}
}

func TestConfigLogValueRedactsToken(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	cfg := discord.Config{BotToken: "MTIzNDU2.secret-token", AppID: "7", PublicKey: strings.Repeat("ab", 32), APIURL: "https://user:pass@proxy.example"}
	log.Info("discord", "config", cfg)
	out := buf.String()
	for _, secret := range []string{"secret-token", "MTIzNDU2", "pass"} {
		if strings.Contains(out, secret) {
			t.Errorf("log line leaks %q: %s", secret, out)
		}
	}
	if !strings.Contains(out, `"bot_token":"[redacted]"`) {
		t.Errorf("log line = %s, want the token shown as redacted", out)
	}
}

// Example shows the wiring cmd/signoff does (here without connecting).
func Example() {
	gw := &bot.Gateway{} // the real one, with its Store, Signer, …
	a, err := discord.New(discord.Config{
		BotToken:  "token",                  // SIGNOFF_DISCORD_BOT_TOKEN
		PublicKey: strings.Repeat("ab", 32), // SIGNOFF_DISCORD_PUBLIC_KEY
		Pending: func(ctx context.Context) ([]*bot.Request, error) {
			return gw.List(ctx, bot.Filter{Status: bot.Pending})
		},
	}, gw)
	if err != nil {
		panic(err)
	}
	gw.Channels = map[bot.Platform]bot.Channel{bot.Discord: a}
	mux := http.NewServeMux()
	mux.Handle("POST /discord/interactions", a.InteractionsHandler())
	// go a.Run(ctx) keeps the gateway connection until ctx ends.
	fmt.Println(a.PostingEnabled(), a.InteractionsEnabled())
	// Output: true true
}

// Run owns every goroutine it starts, discordgo's included: once it has
// returned, none is left, even after a drop and a reconnect.
func TestRunLeavesNoGoroutines(t *testing.T) {
	fake := discordfake.New(t)
	a, err := discord.New(discord.Config{
		BotToken: strings.TrimPrefix(fake.Token, "Bot "), APIURL: fake.URL, Logger: testLogger(),
		ReconnectMin: 20 * time.Millisecond, ReconnectMax: 100 * time.Millisecond,
	}, discardSink{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	if err := fake.WaitConnected(ctx10(t), 1); err != nil {
		t.Fatal(err)
	}
	fake.Drop()
	fake.Allow()
	if err := fake.WaitConnected(ctx10(t), 2); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	// discordgo's reader sees its closed socket just after Close returns,
	// so wait (boundedly) for it to go.
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		left := strings.Contains(stacks, "discordgo.(*Session).listen") || strings.Contains(stacks, "discordgo.(*Session).heartbeat") ||
			strings.Contains(stacks, "discordgo.(*Session).reconnect") || strings.Contains(stacks, "discord.(*Adapter)")
		if !left {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines left after Run returned:\n%s", stacks)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
