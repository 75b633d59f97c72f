package nostr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
)

var _ bot.Publisher = (*Adapter)(nil)

// Publish sends text (already marked and escaped by the gateway) to the
// channel's relays as an event signed by the gateway: a kind-1 note in
// mode "note", a kind-42 message in a nip28 channel, a kind-9 message in a
// nip29 group. It carries no signoff request tag: nothing to vote on.
func (a *Adapter) Publish(ctx context.Context, persona string, c bot.ChannelConfig, text string) (bot.MessageRef, error) {
	relays, err := a.channelRelays(c)
	if err != nil {
		return bot.MessageRef{}, err
	}
	kind := gonostr.KindTextNote
	tags := gonostr.Tags{}
	switch c.Mode {
	case "", ModeNote:
	case ModeNIP28:
		if !isEventID(c.Root) {
			return bot.MessageRef{}, fmt.Errorf("nostr: nip28 channel root %q is not an event id", c.Root)
		}
		kind = gonostr.KindChannelMessage
		tags = append(tags, gonostr.Tag{"e", strings.ToLower(c.Root), relays[0], "root"})
	case ModeNIP29:
		if c.Group == "" {
			return bot.MessageRef{}, errors.New("nostr: nip29 channel names no group")
		}
		kind = gonostr.KindSimpleGroupChatMessage
		tags = append(tags, gonostr.Tag{"h", c.Group})
	default:
		return bot.MessageRef{}, fmt.Errorf("nostr: unknown channel mode %q (want note, nip28 or nip29)", c.Mode)
	}
	tags = append(tags, gonostr.Tag{"t", "signoff"})
	ev, err := a.sign(kind, text, tags, a.cfg.Now())
	if err != nil {
		return bot.MessageRef{}, err
	}
	accepted, err := a.publish(ctx, relays, ev)
	if err != nil {
		return bot.MessageRef{}, err
	}
	a.log.Info("nostr: published", "persona", persona, "event", ev.ID, "kind", ev.Kind, "accepted", accepted)
	return bot.MessageRef{Platform: bot.Nostr, ID: ev.ID}, nil
}
