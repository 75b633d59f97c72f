package slack

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackutilsx"

	"github.com/signoff/signoff/bot"
)

// Button action ids; the button value is the request id.
const (
	actionApprove = "signoff_approve"
	actionDeny    = "signoff_deny"
	actionAlways  = "signoff_always"
	blockPrefix   = "signoff:"
)

// Display limits, well inside Slack's per-block limits. What an agent
// wrote is shown as literal rich text, never as mrkdwn, so it cannot
// close a code block, fake a label or mention @channel.
const (
	maxActionRunes = 2800
	maxReasonRunes = 1500
	maxRiskReasons = 10
	maxFallback    = 3000
)

var bold = &slackapi.RichTextSectionTextStyle{Bold: true}

// requestCard is the ⛔ card: header, the action in a code block, reason,
// risk and its reasons, persona and deadline, Approve / Deny buttons and
// the line on how to answer by reaction.
func requestCard(r *bot.Request) []slackapi.Block {
	approve := slackapi.NewButtonBlockElement(actionApprove, r.ID,
		slackapi.NewTextBlockObject(slackapi.PlainTextType, "✅ Approve", true, false))
	approve.Style = slackapi.StylePrimary
	deny := slackapi.NewButtonBlockElement(actionDeny, r.ID,
		slackapi.NewTextBlockObject(slackapi.PlainTextType, "❌ Deny", true, false))
	deny.Style = slackapi.StyleDanger
	buttons := []slackapi.BlockElement{approve, deny}
	blocks := []slackapi.Block{
		slackapi.NewHeaderBlock(slackapi.NewTextBlockObject(slackapi.PlainTextType, "⛔ Approval needed", true, false)),
	}
	if e := r.Escalated; e != nil {
		blocks = append(blocks, escalationBlock(e))
	}
	blocks = append(blocks, details(r, true))
	if g := r.GrantScope; g != nil {
		// The third answer, with exactly what it grants shown before anyone
		// clicks (plain text: the scope holds agent text).
		buttons = append(buttons, slackapi.NewButtonBlockElement(actionAlways, r.ID,
			slackapi.NewTextBlockObject(slackapi.PlainTextType, "♾️ Always", true, false)))
		blocks = append(blocks, slackapi.NewContextBlock("signoff_always",
			slackapi.NewTextBlockObject(slackapi.PlainTextType, clip("♾️ Always "+alwaysText(g), maxReasonRunes), false, false)))
	}
	return append(blocks,
		slackapi.NewActionBlock(blockPrefix+r.ID, buttons...),
		slackapi.NewContextBlock("signoff_how",
			slackapi.NewTextBlockObject(slackapi.PlainTextType, bot.HowToAnswer+" · request "+r.ID, false, false)),
	)
}

// alwaysText says what the Always button grants and for how long.
func alwaysText(g *bot.GrantScope) string {
	ttl := g.TTL
	if ttl <= 0 {
		ttl = bot.DefaultGrantTTL
	}
	return "approves, and does not ask again for " + g.Text() + ", for " + ttl.String() +
		" after approval — only when the owner, or approvalQuorum members, all answer Always; otherwise it approves once"
}

// decidedCard replaces the card when r is decided: the outcome (who and
// when), the same details, and no buttons.
func decidedCard(r *bot.Request) []slackapi.Block {
	return []slackapi.Block{
		slackapi.NewRichTextBlock("signoff_outcome",
			slackapi.NewRichTextSection(slackapi.NewRichTextSectionTextElement(bot.Outcome(r), bold))),
		details(r, false),
		slackapi.NewContextBlock("signoff_how",
			slackapi.NewTextBlockObject(slackapi.PlainTextType, "request "+r.ID, false, false)),
	}
}

// details is the body both cards share; a pending card also shows the
// deadline.
func details(r *bot.Request, deadline bool) *slackapi.RichTextBlock {
	kind := string(r.Kind)
	if kind == "" {
		kind = string(bot.KindCommand)
	}
	reason := r.Reason
	if strings.TrimSpace(reason) == "" {
		reason = "(none given)"
	}
	level := string(r.Level)
	if level == "" {
		level = "unknown"
	}
	// The gateway's level and reasons come before the agent's text, which
	// is escaped (bot.Escape): it cannot repaint or reorder the card.
	elems := []slackapi.RichTextElement{
		slackapi.NewRichTextSection(field("Risk: ", level)...),
	}
	if len(r.Reasons) > 0 {
		var items []slackapi.RichTextElement
		for i, why := range r.Reasons {
			if i == maxRiskReasons {
				items = append(items, slackapi.NewRichTextSection(slackapi.NewRichTextSectionTextElement(
					fmt.Sprintf("… and %d more", len(r.Reasons)-i), nil)))
				break
			}
			items = append(items, slackapi.NewRichTextSection(slackapi.NewRichTextSectionTextElement(clip(bot.Escape(why), 300), nil)))
		}
		elems = append(elems, slackapi.NewRichTextList(slackapi.RTEListBullet, 0, items...))
	}
	elems = append(elems,
		slackapi.NewRichTextSection(slackapi.NewRichTextSectionTextElement("Action ("+kind+")", bold)),
		&slackapi.RichTextPreformatted{
			Type:     slackapi.RTEPreformatted,
			Elements: []slackapi.RichTextSectionElement{slackapi.NewRichTextSectionTextElement(clip(bot.EscapeLines(r.Action), maxActionRunes), nil)},
		},
		slackapi.NewRichTextSection(field("Reason: ", clip(bot.Escape(reason), maxReasonRunes))...),
	)
	line := field("Persona: ", bot.Escape(r.Persona))
	if deadline {
		line = append(line, slackapi.NewRichTextSectionTextElement("   ", nil))
		line = append(line, field("Deadline: ", r.Deadline.UTC().Format(time.RFC3339))...)
	}
	elems = append(elems, slackapi.NewRichTextSection(line...))
	return slackapi.NewRichTextBlock("signoff_details", elems...)
}

// field is a bold label followed by its literal value.
func field(label, value string) []slackapi.RichTextSectionElement {
	return []slackapi.RichTextSectionElement{
		slackapi.NewRichTextSectionTextElement(label, bold),
		slackapi.NewRichTextSectionTextElement(value, nil),
	}
}

// requestText is the notification and fallback text: the ⛔ line and how
// to answer, escaped (slackutilsx.EscapeMessage), so it cannot ping or
// link; an escalation's line then pings exactly the people it calls on.
func requestText(r *bot.Request) string {
	s := slackutilsx.EscapeMessage(clip(bot.Headline(r), maxFallback) + "\n" + bot.HowToAnswer)
	if e := r.Escalated; e != nil {
		s += "\n" + e.Line(func(p bot.Person) (string, bool) {
			id, ok := slackUser(p)
			return "<@" + id + ">", ok
		}, slackutilsx.EscapeMessage)
	}
	return s
}

// escalationBlock is the escalation line as rich text: a user element for
// each person with a Slack identity, plain text for the rest.
func escalationBlock(e *bot.Escalated) slackapi.Block {
	elems := []slackapi.RichTextSectionElement{slackapi.NewRichTextSectionTextElement("escalated to ", bold)}
	for i, p := range e.To {
		if i > 0 {
			elems = append(elems, slackapi.NewRichTextSectionTextElement(", ", nil))
		}
		if id, ok := slackUser(p); ok {
			elems = append(elems, slackapi.NewRichTextSectionUserElement(id, nil))
		} else {
			elems = append(elems, slackapi.NewRichTextSectionTextElement(bot.Escape(p.Name), nil))
		}
	}
	if e.Needs != "" {
		elems = append(elems, slackapi.NewRichTextSectionTextElement(": still needs "+bot.Escape(e.Needs), nil))
	}
	return slackapi.NewRichTextBlock("signoff_escalated", slackapi.NewRichTextSection(elems...))
}

// slackUser is p's Slack user id, when it is one (letters and digits).
func slackUser(p bot.Person) (string, bool) {
	id, ok := p.IdentityOn(bot.Slack)
	if !ok {
		return "", false
	}
	for _, c := range id {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return "", false
		}
	}
	return id, true
}

func decidedText(r *bot.Request) string {
	return clip(bot.Outcome(r)+" — "+bot.Escape(r.Action), maxFallback)
}

// clip shortens s to n runes, saying how much was left out.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	return string(runes[:n]) + fmt.Sprintf("… (%d more characters)", len(runes)-n)
}
