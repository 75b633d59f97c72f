package slack

import (
	"context"
	"errors"
	"fmt"

	slackapi "github.com/slack-go/slack"

	"github.com/signoff/signoff/bot"
)

var _ bot.Publisher = (*Adapter)(nil)

// Publish posts text (already marked and escaped by the gateway) in the
// Slack channel c.Target as a plain message: no blocks, no buttons, no
// reactions. Slack's &, < and > are escaped, so the text cannot mention
// @channel or link with <…>.
func (a *Adapter) Publish(ctx context.Context, persona string, c bot.ChannelConfig, text string) (bot.MessageRef, error) {
	if a.cfg.BotToken == "" {
		return bot.MessageRef{}, errors.New("slack: no bot token configured, so nothing can be posted")
	}
	if c.Target == "" {
		return bot.MessageRef{}, fmt.Errorf("slack: persona %s names a Slack channel without an id", persona)
	}
	ch, ts, err := a.api.PostMessageContext(ctx, c.Target,
		slackapi.MsgOptionText(text, true),
		slackapi.MsgOptionDisableLinkUnfurl(),
		slackapi.MsgOptionDisableMediaUnfurl(),
	)
	if err != nil {
		return bot.MessageRef{}, fmt.Errorf("slack: post to %s: %w", c.Target, err)
	}
	return bot.MessageRef{Platform: bot.Slack, Channel: ch, ID: ts}, nil
}
