package discord

import (
	"context"
	"fmt"

	"github.com/bwmarrin/discordgo"

	"github.com/signoff/signoff/bot"
)

var _ bot.Publisher = (*Adapter)(nil)

// Publish posts text (already marked and escaped by the gateway) in the
// Discord channel c.Target as a plain message: no components, no
// reactions, no embeds, and no mention pings (@everyone included).
func (a *Adapter) Publish(ctx context.Context, _ string, c bot.ChannelConfig, text string) (bot.MessageRef, error) {
	if a.session == nil {
		return bot.MessageRef{}, ErrNoBotToken
	}
	if c.Platform != bot.Discord || c.Target == "" {
		return bot.MessageRef{}, fmt.Errorf("channel %s:%q is not a Discord channel id", c.Platform, c.Target)
	}
	m, err := a.session.ChannelMessageSendComplex(c.Target, &discordgo.MessageSend{
		Content:         text,
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}},
		Flags:           discordgo.MessageFlagsSuppressEmbeds,
	}, discordgo.WithContext(ctx))
	if err != nil {
		return bot.MessageRef{}, fmt.Errorf("post to channel %s: %w", c.Target, restError(err))
	}
	return bot.MessageRef{Platform: bot.Discord, Channel: c.Target, ID: m.ID}, nil
}
