package discord

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

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
	var first bot.MessageRef
	parts := splitContent(text, maxContent)
	for i, part := range parts {
		m, err := a.session.ChannelMessageSendComplex(c.Target, &discordgo.MessageSend{
			Content:         part,
			AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}},
			Flags:           discordgo.MessageFlagsSuppressEmbeds,
		}, discordgo.WithContext(ctx))
		if err != nil {
			if i > 0 {
				return first, fmt.Errorf("post to channel %s: part %d of %d: %w", c.Target, i+1, len(parts), restError(err))
			}
			return bot.MessageRef{}, fmt.Errorf("post to channel %s: %w", c.Target, restError(err))
		}
		if i == 0 {
			first = bot.MessageRef{Platform: bot.Discord, Channel: c.Target, ID: m.ID}
		}
	}
	return first, nil
}

// splitContent cuts text into messages of at most n characters (Discord
// refuses content over 2000), each ending at a line break or a space when
// one is in the last quarter of the part, so words are kept whole.
func splitContent(text string, n int) []string {
	var parts []string
	for utf8.RuneCountInString(text) > n {
		cut, runes := 0, 0 // cut: the byte offset of rune n+1
		for i := range text {
			if runes == n {
				cut = i
				break
			}
			runes++
		}
		head := text[:cut]
		if i := strings.LastIndexAny(head, "\n "); i > 0 && utf8.RuneCountInString(head[i:]) < n/4 {
			head = head[:i+1]
		}
		parts = append(parts, head)
		text = text[len(head):]
	}
	return append(parts, text)
}
