package slack

import (
	"context"
	"encoding/json"

	"github.com/signoff/signoff/bot"
)

// threadMessage is the part of a `message` event signoff reads: a reply in
// a card's thread (the app subscribes to message.channels).
type threadMessage struct {
	Event struct {
		Type     string `json:"type"`
		Subtype  string `json:"subtype"`
		User     string `json:"user"`
		BotID    string `json:"bot_id"`
		Text     string `json:"text"`
		Channel  string `json:"channel"`
		ThreadTS string `json:"thread_ts"`
		TS       string `json:"ts"`
	} `json:"event"`
}

// onThreadReply turns a reply in a card's thread into a ballot: "❌ use the
// staging bucket" denies with that reason; a reply with no answer first is
// recorded as a remark (ignored as a vote, its text kept). Replies that are
// not in a thread of ours, edits, and bots' messages are not votes.
func (a *Adapter) onThreadReply(ctx context.Context, raw []byte, dedup string, evidence json.RawMessage) error {
	var m threadMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return errMalformed
	}
	ev := m.Event
	if ev.Subtype != "" || ev.BotID != "" || ev.ThreadTS == "" || ev.ThreadTS == ev.TS {
		return nil
	}
	if !slackID(ev.User) || !slackID(ev.Channel) || !slackTS(ev.ThreadTS) {
		return errMalformed
	}
	if own := a.ownUser(ctx); own != "" && ev.User == own {
		return nil
	}
	choice, reason := bot.ParseReply(ev.Text)
	b := bot.Ballot{
		Ref:      bot.MessageRef{Platform: bot.Slack, Channel: ev.Channel, ID: ev.ThreadTS},
		Voter:    bot.Identity{Platform: bot.Slack, ID: ev.User},
		Choice:   choice,
		Proof:    bot.ProofPlatform,
		DedupKey: "slack:" + dedup,
		Evidence: evidence,
		Reason:   clipReason(reason),
	}
	out, err := a.cast(ctx, b)
	switch {
	case err == nil:
		a.log.Debug("slack thread reply", "request", out.RequestID, "voter", ev.User, "result", out.Result, "reason", out.Reason)
		return nil
	case bot.ErrorCode(err) == bot.ENotFound, permanent(err):
		return nil // a thread that is not a card's
	}
	return err
}

// clipReason bounds a reply kept as a vote's reason.
func clipReason(s string) string { return clip(s, 1000) }
