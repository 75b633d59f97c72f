package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/adapters/discord/discordfake"
	"github.com/signoff/signoff/adapters/slack/slackfake"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
)

// TestDenyReasonReachesTheHook: `signoff deny ID --reason …` is signed with
// the vote, recorded with it, and the agent's hook answer carries it.
func TestDenyReasonReachesTheHook(t *testing.T) {
	gateway(t, demoPersona)
	in := hookInput("Bash", map[string]any{"command": "aws s3 rm --recursive s3://prod-assets"})
	done := background(strings.NewReader(in), "hook", "claude-code")
	r := awaitPending(t)
	if code, out, errs := cli("deny", "--reason", "use the staging bucket", r.ID); code != 0 {
		t.Fatalf("deny = %d %q %q", code, out, errs)
	}
	select {
	case res := <-done:
		dec, why := decision(t, res.stdout)
		if dec != "deny" || !strings.Contains(why, `alice: "use the staging bucket"`) {
			t.Errorf("hook answered %s %q; want deny with alice's reason", dec, why)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("hook still waiting after the deny")
	}
	got := getRequest(t, r.ID)
	if len(got.Votes) != 1 || got.Votes[0].Reason != "use the staging bucket" {
		t.Errorf("votes %+v; want the reason recorded with the vote", got.Votes)
	}
}

// TestApproveReasonThroughRelay: a reason on approve travels in the signed
// reaction through a relay and is shown in the requester's outcome.
func TestApproveReasonIsShownToTheRequester(t *testing.T) {
	gateway(t, demoPersona)
	id, result, code := startRequest(t, "--", "git", "push", "--force")
	if c, _, errs := cli("approve", "--reason", "rebased on purpose", id); c != 0 {
		t.Fatalf("approve = %d %s", c, errs)
	}
	if c := <-code; c != 0 {
		t.Fatalf("request exited %d", c)
	}
	if errs := (<-result)[1]; !strings.Contains(errs, `✅ approved by alice`) || !strings.Contains(errs, `alice: "rebased on purpose"`) {
		t.Errorf("requester saw:\n%s", errs)
	}
}

func getRequest(t *testing.T, id string) *bot.Request {
	t.Helper()
	c := httpapi.NewClient(os.Getenv("SIGNOFF_URL"))
	c.Token = os.Getenv("SIGNOFF_TOKEN") // e2e tests run with tokens on
	r, err := c.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSlackThreadReplyDeniesWithReason: the owner replies "❌ use the
// staging bucket" in the card's thread; the hook's answer carries it.
func TestSlackThreadReplyDeniesWithReason(t *testing.T) {
	fake := slackfake.New(t)
	t.Setenv("SIGNOFF_SLACK_BOT_TOKEN", slackfake.BotToken)
	t.Setenv("SIGNOFF_SLACK_APP_TOKEN", slackfake.AppToken)
	t.Setenv("SIGNOFF_SLACK_API_URL", fake.APIURL)
	gateway(t, "name: demo\nowner:\n  name: alice\n  nostr: OWNER\n  slack: U01ALICE\ntimeout: 1m\nchannels:\n  - slack: C0123456\n")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	done := background(strings.NewReader(hookInput("Bash", map[string]any{"command": "aws s3 rm --recursive s3://prod-assets"})), "hook", "claude-code")
	post, err := fake.Next(ctx, "chat.postMessage")
	if err != nil {
		t.Fatal(err)
	}
	waitRecorded(t, bot.Slack)
	reply := func(id, user, text string) {
		ev := slackfake.ReactionEvent(id, "message", user, "", "C0123456", post.TS)
		ev["event"] = map[string]any{"type": "message", "user": user, "text": text, "channel": "C0123456",
			"thread_ts": post.TS, "ts": fmt.Sprintf("%d.000900", time.Now().Unix())}
		if _, err := fake.Send(ctx, "events_api", ev); err != nil {
			t.Fatal(err)
		}
	}
	reply("Ev1", "U09STRANGER", "✅ looks fine to me") // not an owner: recorded, ignored
	reply("Ev2", "U01ALICE", "❌ use the staging bucket")
	select {
	case res := <-done:
		dec, why := decision(t, res.stdout)
		if dec != "deny" || !strings.Contains(why, `alice: "use the staging bucket"`) || strings.Contains(why, "looks fine") {
			t.Errorf("hook answered %s %q; want deny with alice's reason only", dec, why)
		}
	case <-ctx.Done():
		t.Fatal("hook still waiting after the owner's reply")
	}
}

// TestDiscordReplyDeniesWithReason: the owner replies "deny: not on a
// Friday" to the request message; the hook's answer carries it.
func TestDiscordReplyDeniesWithReason(t *testing.T) {
	fake := discordfake.New(t)
	t.Setenv("SIGNOFF_DISCORD_BOT_TOKEN", strings.TrimPrefix(fake.Token, "Bot "))
	t.Setenv("SIGNOFF_DISCORD_API_URL", fake.URL)
	gateway(t, "name: demo\nowner:\n  name: alice\n  nostr: OWNER\n  discord: \"111111111111111111\"\ntimeout: 1m\nchannels:\n  - discord: \"998877665544332211\"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := fake.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	done := background(strings.NewReader(hookInput("Bash", map[string]any{"command": "terraform destroy"})), "hook", "claude-code")
	for len(fake.Posts()) == 0 {
		if ctx.Err() != nil {
			t.Fatal("nothing posted to Discord")
		}
		time.Sleep(10 * time.Millisecond)
	}
	post := fake.Posts()[0]
	waitRecorded(t, bot.Discord)
	fake.Reply(post.ChannelID, post.MessageID, "222222222222222222", "approve, ship it") // a stranger
	fake.Reply(post.ChannelID, post.MessageID, "111111111111111111", "deny: not on a Friday")
	select {
	case res := <-done:
		dec, why := decision(t, res.stdout)
		if dec != "deny" || !strings.Contains(why, `alice: "not on a Friday"`) || strings.Contains(why, "ship it") {
			t.Errorf("hook answered %s %q; want deny with alice's reason only", dec, why)
		}
	case <-ctx.Done():
		t.Fatal("hook still waiting after the owner's reply")
	}
}

// waitRecorded waits until the one pending request has a message on
// platform recorded: answers to the card find it only then.
func waitRecorded(t *testing.T, p bot.Platform) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range getRequest(t, awaitPending(t).ID).Messages {
			if m.Platform == p {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s message recorded", p)
}
