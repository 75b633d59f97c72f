package discord

import (
	"context"
	"encoding/json"
	"unicode/utf8"

	"github.com/signoff/signoff/bot"
)

// replyPayload is the part of MESSAGE_CREATE signoff reads: a reply to one
// of its request messages. Discord fills content for replies that ping the
// bot (the default for a reply) without the privileged Message Content
// intent.
type replyPayload struct {
	ID        string      `json:"id"`
	ChannelID string      `json:"channel_id"`
	Author    userPayload `json:"author"`
	Content   string      `json:"content"`
	Reference *struct {
		MessageID string `json:"message_id"`
		ChannelID string `json:"channel_id"`
	} `json:"message_reference"`
}

// onReply turns a reply to a request message into a ballot: "❌ use the
// staging bucket" denies with that reason; a reply with no answer first is
// a remark (recorded, ignored as a vote). Other messages are not votes.
func (a *Adapter) onReply(ctx context.Context, raw json.RawMessage, evidence json.RawMessage) {
	var m replyPayload
	if err := json.Unmarshal(raw, &m); err != nil {
		a.log.Warn("malformed message event", "err", err)
		return
	}
	if m.Reference == nil || m.Author.Bot || !snowflake(m.ID) || !snowflake(m.Author.ID) || !snowflake(m.ChannelID) || !snowflake(m.Reference.MessageID) {
		return
	}
	if self := a.selfID(); self != "" && m.Author.ID == self {
		return
	}
	choice, reason := bot.ParseReply(m.Content)
	for len(reason) > 1000 {
		_, n := utf8.DecodeLastRuneInString(reason)
		reason = reason[:len(reason)-n]
	}
	ch := m.ChannelID
	if m.Reference.ChannelID != "" {
		ch = m.Reference.ChannelID
	}
	ref := bot.MessageRef{Platform: bot.Discord, Channel: ch, ID: m.Reference.MessageID}
	b := bot.Ballot{
		Ref:      ref,
		Voter:    bot.Identity{Platform: bot.Discord, ID: m.Author.ID},
		Choice:   choice,
		Proof:    bot.ProofPlatform,
		DedupKey: "discord:message:" + m.ID,
		Evidence: evidence,
		At:       a.cfg.Now(),
		Reason:   reason,
	}
	if id, ok := a.requestFor(ref); ok {
		b.RequestID = id
	}
	a.castReaction(ctx, b)
}
