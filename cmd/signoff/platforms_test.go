package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/adapters/discord/discordfake"
	"github.com/signoff/signoff/adapters/slack/slackfake"
)

// TestEndToEndSlack: serve, configured only by SIGNOFF_SLACK_* variables,
// posts the card to a fake Slack, takes the owner's ✅ over Socket Mode,
// answers the waiting request and edits the card.
func TestEndToEndSlack(t *testing.T) {
	fake := slackfake.New(t)
	t.Setenv("SIGNOFF_SLACK_BOT_TOKEN", slackfake.BotToken)
	t.Setenv("SIGNOFF_SLACK_APP_TOKEN", slackfake.AppToken)
	t.Setenv("SIGNOFF_SLACK_API_URL", fake.APIURL)
	gateway(t, "name: demo\nowner:\n  name: alice\n  nostr: OWNER\n  slack: U01ALICE\ntimeout: 1m\nchannels:\n  - slack: C0123456\n")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	id, result, code := startRequest(t, "--persona", "demo", "--reason", "release", "--", "npm", "publish")
	post, err := fake.Next(ctx, "chat.postMessage")
	if err != nil {
		t.Fatal(err)
	}
	if post.Channel != "C0123456" || !strings.Contains(post.Text, "⛔ approval needed (dangerous): npm publish — release") || !strings.Contains(string(post.Blocks), id) {
		t.Fatalf("posted %+v, want the card for %s in C0123456", post, id)
	}
	if _, err := fake.Send(ctx, "events_api", slackfake.ReactionEvent("Ev1", "reaction_added", "U01ALICE", "white_check_mark", "C0123456", post.TS)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-code:
		if res := <-result; got != 0 || !strings.Contains(res[1], "✅ approved by alice") {
			t.Fatalf("request exited %d:\n%s", got, res[1])
		}
	case <-ctx.Done():
		t.Fatal("request not answered after the owner's ✅ in Slack")
	}
	update, err := fake.Next(ctx, "chat.update")
	if err != nil {
		t.Fatal(err)
	}
	if update.TS != post.TS || !strings.Contains(update.Text, "approved by alice") || strings.Contains(string(update.Blocks), `"button"`) {
		t.Errorf("card edited to %q %s; want the outcome and no buttons", update.Text, update.Blocks)
	}
}

// TestEndToEndDiscord: serve, configured only by SIGNOFF_DISCORD_*
// variables, posts to a fake Discord, takes the owner's ✅ reaction over
// the gateway connection and edits the message.
func TestEndToEndDiscord(t *testing.T) {
	fake := discordfake.New(t)
	t.Setenv("SIGNOFF_DISCORD_BOT_TOKEN", strings.TrimPrefix(fake.Token, "Bot "))
	t.Setenv("SIGNOFF_DISCORD_API_URL", fake.URL)
	gateway(t, "name: demo\nowner:\n  name: alice\n  nostr: OWNER\n  discord: \"111111111111111111\"\ntimeout: 1m\nchannels:\n  - discord: \"998877665544332211\"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := fake.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}

	id, result, code := startRequest(t, "--persona", "demo", "--", "terraform", "destroy")
	for len(fake.Posts()) == 0 {
		if ctx.Err() != nil {
			t.Fatal("nothing posted to Discord")
		}
		time.Sleep(10 * time.Millisecond)
	}
	post := fake.Posts()[0]
	if post.ChannelID != "998877665544332211" || !strings.Contains(string(post.Body), id) {
		t.Fatalf("posted %+v, want the message for %s", post, id)
	}
	if _, err := fake.React(post.ChannelID, post.MessageID, "111111111111111111", "✅"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-code:
		if res := <-result; got != 0 || !strings.Contains(res[1], "✅ approved by alice") {
			t.Fatalf("request exited %d:\n%s", got, res[1])
		}
	case <-ctx.Done():
		t.Fatal("request not answered after the owner's ✅ in Discord")
	}
	edit, err := fake.WaitEdit(ctx, post.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(edit.Body), "approved by alice") || !strings.Contains(string(edit.Body), `"components":[]`) {
		t.Errorf("message edited to %s; want the outcome and no buttons", edit.Body)
	}
}
