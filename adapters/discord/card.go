package discord

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/signoff/signoff/bot"
)

// Discord's limits (discord.com/developers/docs/resources/message and
// …/channel#embed-limits), kept well inside the 6000-character total.
const (
	maxContent     = 2000
	maxDescription = 2000
	maxFieldValue  = 1000
	maxShortField  = 500 // persona, decision, decided by
)

// The emoji the bot adds to every card and reads back after a reconnect.
const (
	emojiApprove = "✅"
	emojiDeny    = "❌"
)

// Button custom_ids: "signoff:approve:<request id>", "signoff:deny:<id>".
const customIDPrefix = "signoff:"

func customID(c bot.Choice, requestID string) string {
	return customIDPrefix + string(c) + ":" + requestID
}

// parseCustomID reads a button's custom_id back. ok is false for anything
// signoff did not put there.
func parseCustomID(s string) (c bot.Choice, requestID string, ok bool) {
	rest, found := strings.CutPrefix(s, customIDPrefix)
	if !found {
		return "", "", false
	}
	choice, id, found := strings.Cut(rest, ":")
	if !found || !validRequestID(id) {
		return "", "", false
	}
	switch bot.Choice(choice) {
	case bot.Approve, bot.Deny, bot.Always:
		return bot.Choice(choice), id, true
	}
	return "", "", false
}

// validRequestID accepts what bot.NewID makes and a little more, never
// anything that could not be a key.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// noMentions stops an agent's text from pinging anyone: @everyone, roles
// and users render as text and notify no one.
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// requestMessage is the card a person sees while the request is pending.
func requestMessage(r *bot.Request) *discordgo.MessageSend {
	buttons := []discordgo.MessageComponent{
		discordgo.Button{Label: "Approve", Style: discordgo.SuccessButton, CustomID: customID(bot.Approve, r.ID), Emoji: &discordgo.ComponentEmoji{Name: emojiApprove}},
		discordgo.Button{Label: "Deny", Style: discordgo.DangerButton, CustomID: customID(bot.Deny, r.ID), Emoji: &discordgo.ComponentEmoji{Name: emojiDeny}},
	}
	e := embed(r)
	if g := r.GrantScope; g != nil {
		// The third answer, with exactly what it grants shown before anyone clicks.
		buttons = append(buttons, discordgo.Button{Label: "Always", Style: discordgo.SecondaryButton, CustomID: customID(bot.Always, r.ID), Emoji: &discordgo.ComponentEmoji{Name: "♾️"}})
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "♾️ Always", Value: clip(escapeMarkdown(AlwaysText(g)), maxFieldValue)})
	}
	tail, mentions := bot.HowToAnswer, noMentions()
	if esc := r.Escalated; esc != nil {
		// Pings exactly the people the escalation calls on, no one else.
		var users []string
		line := esc.Line(func(p bot.Person) (string, bool) {
			id, ok := p.IdentityOn(bot.Discord)
			if !ok || !isSnowflake(id) {
				return "", false
			}
			users = append(users, id)
			return "<@" + id + ">", true
		}, escapeMarkdown)
		tail = clip(line, maxContent/2) + "\n" + tail
		mentions.Users = users
	}
	return &discordgo.MessageSend{
		Content:         content(r, tail),
		Embeds:          []*discordgo.MessageEmbed{e},
		Components:      []discordgo.MessageComponent{discordgo.ActionsRow{Components: buttons}},
		AllowedMentions: mentions,
	}
}

// isSnowflake reports whether id is a Discord id: digits only.
func isSnowflake(id string) bool {
	if id == "" || len(id) > 20 {
		return false
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// AlwaysText says what the Always button grants and for how long.
func AlwaysText(g *bot.GrantScope) string {
	ttl := g.TTL
	if ttl <= 0 {
		ttl = bot.DefaultGrantTTL
	}
	return "approves, and does not ask again for " + g.Text() + ", for " + ttl.String() +
		" after approval — only when the owner, or approvalQuorum members, all answer Always; otherwise it approves once"
}

// decidedEdit turns the card into the record of its outcome: the outcome
// line first, the decision in the embed, no buttons.
func decidedEdit(r *bot.Request, ref bot.MessageRef) *discordgo.MessageEdit {
	outcome := clip(escapeMarkdown(bot.Outcome(r)), maxShortField)
	text := content(r, outcome)
	e := embed(r)
	e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "Decision", Value: outcome})
	if len(r.DecidedBy) > 0 {
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "Decided by", Value: clip(escapeMarkdown(strings.Join(r.DecidedBy, ", ")), maxShortField), Inline: true})
	}
	if r.DecidedAt != nil {
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "Decided at", Value: when(*r.DecidedAt), Inline: true})
	}
	e.Color = statusColor(r.Status)
	e.Footer = &discordgo.MessageEmbedFooter{Text: "signoff · decided; later answers are recorded and ignored"}
	embeds := []*discordgo.MessageEmbed{e}
	components := []discordgo.MessageComponent{}
	return &discordgo.MessageEdit{
		ID:              ref.ID,
		Channel:         ref.Channel,
		Content:         &text,
		Embeds:          &embeds,
		Components:      &components,
		AllowedMentions: noMentions(),
	}
}

// content is the message text: the ⛔ headline on one line, then tail.
// The headline is the agent's text, so it is flattened to one line and its
// markdown escaped: it cannot fake a second line ("✅ approved by alice"),
// a link or a mention.
func content(r *bot.Request, tail string) string {
	head := escapeMarkdown(oneLine(bot.Headline(r)))
	return clip(head, maxContent-utf8.RuneCountInString(tail)-1) + "\n" + tail
}

func embed(r *bot.Request) *discordgo.MessageEmbed {
	risk := string(r.Level)
	if risk == "" {
		risk = "unknown"
	}
	if len(r.Reasons) > 0 {
		risk += ": " + bot.Escape(strings.Join(r.Reasons, "; "))
	}
	// Agent text is escaped (bot.Escape); the level leads the headline.
	fields := []*discordgo.MessageEmbedField{
		{Name: "Risk", Value: clip(escapeMarkdown(risk), maxFieldValue)},
	}
	if r.Reason != "" {
		fields = append(fields, &discordgo.MessageEmbedField{Name: "Reason", Value: clip(escapeMarkdown(bot.Escape(r.Reason)), maxFieldValue)})
	}
	fields = append(fields,
		&discordgo.MessageEmbedField{Name: "Persona", Value: orDash(clip(escapeMarkdown(bot.Escape(r.Persona)), maxShortField)), Inline: true},
		&discordgo.MessageEmbedField{Name: "Deadline", Value: when(r.Deadline), Inline: true},
		&discordgo.MessageEmbedField{Name: "Request", Value: "`" + r.ID + "`", Inline: true},
	)
	kind := string(r.Kind)
	if kind == "" {
		kind = string(bot.KindCommand)
	}
	return &discordgo.MessageEmbed{
		Title:       "Approval needed (" + kind + ")",
		Description: codeBlock(bot.EscapeLines(r.Action), maxDescription),
		Color:       levelColor(r.Level),
		Fields:      fields,
		Footer:      &discordgo.MessageEmbedFooter{Text: "signoff · " + bot.HowToAnswer + ", or use the buttons"},
	}
}

// orDash stands in for an empty field value, which Discord refuses.
func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

// when shows a time in each reader's own zone (Discord's <t:…> markup)
// and in UTC for the record.
func when(t time.Time) string {
	return fmt.Sprintf("<t:%d:R> (%s)", t.Unix(), t.UTC().Format(time.RFC3339))
}

func levelColor(l bot.Level) int {
	switch l {
	case bot.Safe:
		return 0x2ecc71
	case bot.Caution:
		return 0xf1c40f
	}
	return 0xe74c3c // dangerous, or unknown: fail loud
}

func statusColor(s bot.Status) int {
	switch s {
	case bot.Approved:
		return 0x2ecc71
	case bot.Denied:
		return 0xe74c3c
	}
	return 0x95a5a6
}

// codeBlock shows text verbatim. A ``` inside it would close the block
// early, so each backtick run is broken with zero-width spaces.
func codeBlock(s string, limit int) string {
	s = strings.ReplaceAll(s, "```", "`\u200b`\u200b`")
	return "```\n" + clip(s, limit-8) + "\n```"
}

// oneLine replaces line breaks with a visible ↵.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ↵ ", "\n", " ↵ ", "\r", " ↵ ", "\u2028", " ↵ ", "\u2029", " ↵ ", "\u0085", " ↵ ").Replace(s)
}

var markdownEscaper = func() *strings.Replacer {
	var pairs []string
	for _, c := range `\*_~` + "`" + `|<>[]#@` {
		pairs = append(pairs, string(c), `\`+string(c))
	}
	return strings.NewReplacer(pairs...)
}()

// escapeMarkdown makes Discord show s as typed: no bold, links, spoilers,
// headings, mentions or timestamps.
func escapeMarkdown(s string) string { return markdownEscaper.Replace(s) }

// clip cuts s to at most n runes, marking the cut with an ellipsis, and
// never leaves a dangling escape backslash.
func clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)[:n-1]
	trailing := 0
	for i := len(runes) - 1; i >= 0 && runes[i] == '\\'; i-- {
		trailing++
	}
	if trailing%2 == 1 {
		runes = runes[:len(runes)-1]
	}
	return string(runes) + "…"
}
