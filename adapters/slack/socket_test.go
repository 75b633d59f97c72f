package slack_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/signoff/signoff/adapters/slack/slackfake"
	"github.com/signoff/signoff/bot"
)

// Through Socket Mode: slack-go's real socketmode client connected to the
// fake's websocket, votes tallied by the real gateway and store.

func TestSocketOwnerApprovesByReaction(t *testing.T) {
	h := newHarness(t, ownerPersona(), socketMode)
	r, post := h.submit("rm -rf ./build")

	if post.Channel != channelID {
		t.Errorf("posted to %q, want %q", post.Channel, channelID)
	}
	wantText := "⛔ approval needed (dangerous): rm -rf ./build — clean up the build cache\n" + bot.HowToAnswer
	if post.Text != wantText {
		t.Errorf("fallback text = %q, want %q", post.Text, wantText)
	}
	if got, want := blockTypes(t, post.Blocks), []string{"header", "rich_text", "actions", "context"}; !slices.Equal(got, want) {
		t.Errorf("card blocks = %v, want %v", got, want)
	}
	for _, want := range []string{`"action_id":"signoff_approve"`, `"action_id":"signoff_deny"`, `"value":"` + r.ID + `"`, `"text":"rm -rf ./build"`, "rich_text_preformatted"} {
		if !strings.Contains(string(post.Blocks), want) {
			t.Errorf("card lacks %s:\n%s", want, post.Blocks)
		}
	}
	for _, name := range []string{"white_check_mark", "x"} {
		c, err := h.fake.Next(h.ctx(), "reactions.add")
		if err != nil {
			t.Fatal(err)
		}
		if c.Name != name || c.Channel != channelID || c.Form.Get("timestamp") != post.TS {
			t.Errorf("reactions.add %s on %s/%s, want %s on %s/%s", c.Name, c.Channel, c.Form.Get("timestamp"), name, channelID, post.TS)
		}
	}
	if len(r.Messages) != 2 || r.Messages[1] != (bot.MessageRef{Platform: bot.Slack, Channel: channelID, ID: post.TS}) {
		t.Errorf("request messages = %+v, want the Nostr event and the Slack card %s/%s", r.Messages, channelID, post.TS)
	}

	// The bot's own reactions arrive as events too; they are not votes.
	h.sendSocket("events_api", slackfake.ReactionEvent("EvBot1", "reaction_added", slackfake.BotUserID, "white_check_mark", channelID, post.TS))
	h.sendSocket("events_api", slackfake.ReactionEvent("EvA1", "reaction_added", alice, "white_check_mark", channelID, post.TS))

	got := h.env.Await(t, r.ID)
	if got.Status != bot.Approved || !slices.Equal(got.DecidedBy, []string{"alice"}) {
		t.Fatalf("request is %s by %v, want approved by [alice]", got.Status, got.DecidedBy)
	}
	if want := []string{alice + ":approve:counted"}; !slices.Equal(votes(got), want) {
		t.Errorf("votes = %v, want %v", votes(got), want)
	}
	if v := got.Votes[0]; v.Proof != bot.ProofPlatform {
		t.Errorf("vote proof = %q, want %q", v.Proof, bot.ProofPlatform)
	}
	// The audit log keeps the envelope as received on the socket.
	ev := auditEvidence(t, h, "vote")
	if len(ev) != 1 {
		t.Fatalf("audit log has %d vote records, want 1", len(ev))
	}
	var socket struct {
		Transport  string `json:"transport"`
		EnvelopeID string `json:"envelope_id"`
		Payload    struct {
			EventID string `json:"event_id"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(ev[0], &socket); err != nil || socket.Transport != "socket_mode" || socket.EnvelopeID == "" || socket.Payload.EventID != "EvA1" {
		t.Errorf("vote evidence = %s (%v), want the socket_mode envelope of EvA1", ev[0], err)
	}

	up, err := h.fake.Next(h.ctx(), "chat.update")
	if err != nil {
		t.Fatal(err)
	}
	if up.Channel != channelID || up.TS != post.TS {
		t.Errorf("chat.update on %s/%s, want %s/%s", up.Channel, up.TS, channelID, post.TS)
	}
	outcome := bot.Outcome(got)
	if !strings.HasPrefix(outcome, "✅ approved by alice at ") {
		t.Fatalf("outcome = %q", outcome)
	}
	if !strings.HasPrefix(up.Text, outcome) {
		t.Errorf("updated text = %q, want it to start with %q", up.Text, outcome)
	}
	if types := blockTypes(t, up.Blocks); slices.Contains(types, "actions") {
		t.Errorf("updated card still has buttons: %v", types)
	}
	if !strings.Contains(string(up.Blocks), mustJSONString(outcome)) {
		t.Errorf("updated card does not show %q:\n%s", outcome, up.Blocks)
	}
}

// auditEvidence returns the evidence of the audit records of type typ.
func auditEvidence(t *testing.T, h *harness, typ string) []json.RawMessage {
	t.Helper()
	raw, err := os.ReadFile(h.env.AuditPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []json.RawMessage
	for line := range strings.Lines(string(raw)) {
		var rec struct {
			Type     string          `json:"type"`
			Evidence json.RawMessage `json:"evidence"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if rec.Type == typ {
			out = append(out, rec.Evidence)
		}
	}
	return out
}

func mustJSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestSocketQuorumByButtonAndReaction(t *testing.T) {
	h := newHarness(t, quorumPersona(), socketMode)
	r, post := h.submit("terraform apply")

	// bob clicks Approve: counted, still pending, and he is told so.
	h.sendSocket("interactive", slackfake.BlockActions(bob, channelID, post.TS, "signoff_approve", r.ID, "1700000001.000001", h.fake.ResponseURL("b1")))
	eph, err := h.fake.Next(h.ctx(), "chat.postEphemeral")
	if err != nil {
		t.Fatal(err)
	}
	if eph.User != bob || eph.Channel != channelID || !strings.Contains(eph.Text, "counted") {
		t.Errorf("ephemeral to %s in %s: %q, want a 'counted' note to %s in %s", eph.User, eph.Channel, eph.Text, bob, channelID)
	}
	if st := h.get(r.ID).Status; st != bot.Pending {
		t.Fatalf("after one member approval: %s, want pending", st)
	}

	// carol reacts ✔️: the second member approval decides.
	h.sendSocket("events_api", slackfake.ReactionEvent("EvC1", "reaction_added", carol, "heavy_check_mark", channelID, post.TS))
	got := h.env.Await(t, r.ID)
	if got.Status != bot.Approved || !slices.Equal(got.DecidedBy, []string{"bob", "carol"}) {
		t.Fatalf("request is %s by %v, want approved by [bob carol]", got.Status, got.DecidedBy)
	}
	up, err := h.fake.Next(h.ctx(), "chat.update")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(up.Text, "approved by bob, carol") {
		t.Errorf("updated text = %q, want it to name bob and carol", up.Text)
	}
}

func TestSocketIneligibleClicks(t *testing.T) {
	tests := []struct {
		name, user string
	}{
		{"the agent's own user", agentUser},
		{"a stranger", stranger},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, quorumPersona(), socketMode)
			r, post := h.submit("git push --force")
			h.sendSocket("interactive", slackfake.BlockActions(tt.user, channelID, post.TS, "signoff_approve", r.ID, "1700000002.000001", h.fake.ResponseURL("x")))
			eph, err := h.fake.Next(h.ctx(), "chat.postEphemeral")
			if err != nil {
				t.Fatal(err)
			}
			if eph.User != tt.user || !strings.HasPrefix(eph.Text, "Your vote was not counted: ") {
				t.Errorf("ephemeral to %s: %q, want a 'not counted' reason to %s", eph.User, eph.Text, tt.user)
			}
			got := h.get(r.ID)
			if got.Status != bot.Pending {
				t.Errorf("status = %s, want pending", got.Status)
			}
			if want := []string{tt.user + ":approve:ignored"}; !slices.Equal(votes(got), want) {
				t.Errorf("votes = %v, want %v", votes(got), want)
			}
			if why := got.Votes[0].Why; why == "" || !strings.Contains(eph.Text, why) {
				t.Errorf("ephemeral %q does not carry the store's reason %q", eph.Text, why)
			}
		})
	}
}

func TestSocketDoubleClickCountsOnce(t *testing.T) {
	h := newHarness(t, quorumPersona(), socketMode)
	r, post := h.submit("npm publish")
	click := slackfake.BlockActions(bob, channelID, post.TS, "signoff_approve", r.ID, "1700000003.000001", h.fake.ResponseURL("d"))

	h.sendSocket("interactive", click)
	if _, err := h.fake.Next(h.ctx(), "chat.postEphemeral"); err != nil {
		t.Fatal(err)
	}
	// The same click delivered again (a redelivered envelope): a duplicate,
	// not recorded, nothing said.
	h.sendSocket("interactive", click)
	// A second, separate click by bob: recorded as ignored, and he is told.
	h.sendSocket("interactive", slackfake.BlockActions(bob, channelID, post.TS, "signoff_approve", r.ID, "1700000003.000002", h.fake.ResponseURL("d")))
	eph, err := h.fake.Next(h.ctx(), "chat.postEphemeral")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(eph.Text, "already voted") {
		t.Errorf("second click answered %q, want 'already voted'", eph.Text)
	}
	got := h.get(r.ID)
	if got.Status != bot.Pending {
		t.Fatalf("status = %s, want pending: one member approval is not a quorum of 2", got.Status)
	}
	if want := []string{bob + ":approve:counted", bob + ":approve:ignored"}; !slices.Equal(votes(got), want) {
		t.Errorf("votes = %v, want %v", votes(got), want)
	}
	if extra := h.fake.Pending("chat.postEphemeral"); len(extra) != 0 {
		t.Errorf("the redelivered click was answered: %+v", extra)
	}
}

func TestSocketAnswersAfterDecisionChangeNothing(t *testing.T) {
	h := newHarness(t, ownerPersona(), socketMode)
	r, post := h.submit("DROP TABLE users")

	h.sendSocket("events_api", slackfake.ReactionEvent("EvA1", "reaction_added", alice, "x", channelID, post.TS))
	denied := h.env.Await(t, r.ID)
	if denied.Status != bot.Denied {
		t.Fatalf("status = %s, want denied", denied.Status)
	}

	// Removing the ❌, reacting ✅, clicking Approve: none of it changes
	// the decision.
	h.sendSocket("events_api", slackfake.ReactionEvent("EvA2", "reaction_removed", alice, "x", channelID, post.TS))
	h.sendSocket("events_api", slackfake.ReactionEvent("EvA3", "reaction_added", alice, "white_check_mark", channelID, post.TS))
	h.sendSocket("interactive", slackfake.BlockActions(alice, channelID, post.TS, "signoff_approve", r.ID, "1700000004.000001", h.fake.ResponseURL("late")))
	eph, err := h.fake.Next(h.ctx(), "chat.postEphemeral")
	if err != nil {
		t.Fatal(err)
	}
	if want := "already decided: " + bot.Outcome(denied); eph.Text != want {
		t.Errorf("late click answered %q, want %q", eph.Text, want)
	}
	got := h.get(r.ID)
	if got.Status != bot.Denied || !slices.Equal(got.DecidedBy, []string{"alice"}) {
		t.Errorf("after late answers: %s by %v, want denied by [alice]", got.Status, got.DecidedBy)
	}
	want := []string{alice + ":deny:counted", alice + ":approve:ignored", alice + ":approve:ignored"}
	if !slices.Equal(votes(got), want) {
		t.Errorf("votes = %v, want %v (a removed reaction records nothing)", votes(got), want)
	}
}

func TestSocketOtherReactionIsRecordedAsIgnored(t *testing.T) {
	h := newHarness(t, quorumPersona(), socketMode)
	r, post := h.submit("sudo reboot")
	h.sendSocket("events_api", slackfake.ReactionEvent("EvEyes", "reaction_added", alice, "eyes", channelID, post.TS))
	h.sendSocket("events_api", slackfake.ReactionEvent("EvSkin", "reaction_added", bob, "white_check_mark::skin-tone-3", channelID, post.TS))
	// A reaction to some other message in the channel is not about any request.
	h.sendSocket("events_api", slackfake.ReactionEvent("EvElse", "reaction_added", alice, "white_check_mark", channelID, "1600000000.000001"))
	got := h.get(r.ID)
	if got.Status != bot.Pending {
		t.Errorf("status = %s, want pending", got.Status)
	}
	want := []string{alice + ":other:ignored", bob + ":approve:counted"}
	if !slices.Equal(votes(got), want) {
		t.Errorf("votes = %v, want %v", votes(got), want)
	}
}

func TestSocketReconnects(t *testing.T) {
	h := newHarness(t, ownerPersona(), socketMode)
	r, post := h.submit("git reset --hard")

	// Slack asks the app to reconnect; then the socket dies outright.
	if _, err := h.fake.Send(h.ctx(), "disconnect", nil); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.WaitDials(h.ctx(), 2); err != nil {
		t.Fatal(err)
	}
	h.fake.DropConnection()
	if err := h.fake.WaitDials(h.ctx(), 3); err != nil {
		t.Fatal(err)
	}
	h.sendSocket("events_api", slackfake.ReactionEvent("EvA1", "reaction_added", alice, "white_check_mark", channelID, post.TS))
	if got := h.env.Await(t, r.ID); got.Status != bot.Approved {
		t.Fatalf("status after reconnecting = %s, want approved", got.Status)
	}
	if opens := h.fake.Opens(); opens < 3 {
		t.Errorf("apps.connections.open called %d times, want at least 3", opens)
	}
}
