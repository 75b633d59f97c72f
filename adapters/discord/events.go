package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/signoff/signoff/bot"
)

// The parts of Discord's payloads the adapter reads. Both the gateway and
// the HTTP endpoint decode into these, so one parser sees all outside input.

type reactionPayload struct {
	UserID    string `json:"user_id"`
	ChannelID string `json:"channel_id"`
	MessageID string `json:"message_id"`
	GuildID   string `json:"guild_id"`
	Emoji     struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"emoji"`
}

// emoji is the reaction as the REST API names it: the character for a
// Unicode emoji, name:id for a custom one.
func (r *reactionPayload) emoji() string {
	if r.Emoji.ID != "" {
		return r.Emoji.Name + ":" + r.Emoji.ID
	}
	return r.Emoji.Name
}

type userPayload struct {
	ID  string `json:"id"`
	Bot bool   `json:"bot"`
}

type interactionPayload struct {
	ID        string                    `json:"id"`
	AppID     string                    `json:"application_id"`
	Type      discordgo.InteractionType `json:"type"`
	Token     string                    `json:"token"`
	ChannelID string                    `json:"channel_id"`
	GuildID   string                    `json:"guild_id"`
	Member    *struct {
		User *userPayload `json:"user"`
	} `json:"member"`
	User    *userPayload `json:"user"`
	Message *struct {
		ID        string `json:"id"`
		ChannelID string `json:"channel_id"`
	} `json:"message"`
	Data struct {
		CustomID      string `json:"custom_id"`
		ComponentType int    `json:"component_type"`
	} `json:"data"`
}

// voter is who clicked: the member's user in a guild, the user in a DM.
func (in *interactionPayload) voter() string {
	if in.Member != nil && in.Member.User != nil {
		return in.Member.User.ID
	}
	if in.User != nil {
		return in.User.ID
	}
	return ""
}

// snowflake reports whether s looks like a Discord id.
func snowflake(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// DedupKeys: stable across replicas, retries and the reaction re-read
// after a reconnect, so each answer is counted once.
func reactionKey(message, user, emoji string) string {
	return "discord:react:" + message + ":" + user + ":" + emoji
}

func interactionKey(id string) string { return "discord:interaction:" + id }

// reactionBallot turns a reaction into a ballot; ok is false for the
// bot's own reactions and for payloads that name no user or message.
func (a *Adapter) reactionBallot(rp *reactionPayload, evidence json.RawMessage) (bot.Ballot, bool) {
	if !snowflake(rp.UserID) || !snowflake(rp.MessageID) || !snowflake(rp.ChannelID) {
		return bot.Ballot{}, false
	}
	if self := a.selfID(); self != "" && rp.UserID == self {
		return bot.Ballot{}, false
	}
	emoji := rp.emoji()
	choice := bot.ParseChoice(emoji)
	if rp.Emoji.ID != "" {
		// A guild's custom emoji is whatever its admins named it.
		choice = bot.Other
	}
	ref := bot.MessageRef{Platform: bot.Discord, Channel: rp.ChannelID, ID: rp.MessageID}
	b := bot.Ballot{
		Ref:      ref,
		Voter:    bot.Identity{Platform: bot.Discord, ID: rp.UserID},
		Choice:   choice,
		Proof:    bot.ProofPlatform,
		DedupKey: reactionKey(rp.MessageID, rp.UserID, emoji),
		Evidence: evidence,
		At:       a.cfg.Now(),
	}
	if id, ok := a.requestFor(ref); ok {
		b.RequestID = id
	}
	return b, true
}

// castReaction hands a reaction to the sink and logs what became of it.
func (a *Adapter) castReaction(ctx context.Context, b bot.Ballot) {
	out, err := a.sink.CastVote(ctx, b)
	if err != nil {
		if bot.ErrorCode(err) == bot.ENotFound {
			// A reaction on some other message in the channel.
			a.log.Debug("reaction on an unknown message", "channel", b.Ref.Channel, "message", b.Ref.ID)
			return
		}
		a.log.Warn("cast reaction", "channel", b.Ref.Channel, "message", b.Ref.ID, "voter", b.Voter.ID, "err", err)
		return
	}
	a.log.Info("reaction", "id", out.RequestID, "voter", b.Voter.ID, "vote", b.Choice, "result", out.Result, "reason", out.Reason, "status", out.Status)
}

// clickTimeout leaves time to answer within Discord's 3 seconds.
const clickTimeout = 2500 * time.Millisecond

// click judges a button click and says what to answer. respond is false
// when another replica (or an earlier delivery) already answered it.
func (a *Adapter) click(ctx context.Context, in *interactionPayload, evidence json.RawMessage, viaHTTP bool) (resp *discordgo.InteractionResponse, respond bool) {
	choice, requestID, ok := parseCustomID(in.Data.CustomID)
	if !ok || in.Data.ComponentType != int(discordgo.ButtonComponent) {
		return ephemeral("This button is not one of signoff's."), true
	}
	voter := in.voter()
	if !snowflake(voter) {
		return ephemeral("signoff could not tell who clicked, so the click was not counted."), true
	}
	b := bot.Ballot{
		RequestID: requestID,
		Voter:     bot.Identity{Platform: bot.Discord, ID: voter},
		Choice:    choice,
		Proof:     bot.ProofPlatform,
		DedupKey:  interactionKey(in.ID),
		Evidence:  evidence,
		At:        a.cfg.Now(),
	}
	if in.Message != nil && snowflake(in.Message.ID) {
		ch := in.ChannelID
		if in.Message.ChannelID != "" {
			ch = in.Message.ChannelID
		}
		b.Ref = bot.MessageRef{Platform: bot.Discord, Channel: ch, ID: in.Message.ID}
	}
	// Discord waits 3 seconds for the answer; a slow store gets told so.
	vctx, cancel := context.WithTimeout(ctx, clickTimeout)
	out, err := a.sink.CastVote(vctx, b)
	cancel()
	if err != nil {
		a.log.Warn("cast click", "id", requestID, "voter", voter, "err", err)
		return ephemeral("Your vote could not be recorded: " + bot.ErrorMessage(err) + ". Try again."), true
	}
	a.log.Info("click", "id", requestID, "voter", voter, "vote", choice, "result", out.Result, "reason", out.Reason, "status", out.Status)
	switch out.Result {
	case bot.Counted:
		msg := fmt.Sprintf("Your vote to %s was counted.", choice)
		if out.Status.Final() {
			msg += fmt.Sprintf(" The request is now %s.", out.Status)
		} else {
			msg += " Waiting for more votes."
		}
		return ephemeral(msg), true
	case bot.Duplicate:
		// The same interaction again: on the gateway another replica
		// answered it; over HTTP Discord retried it.
		return ephemeral("This click was already recorded."), viaHTTP
	default:
		why := out.Reason
		if why == "" {
			why = "it was ignored"
		}
		if out.Status.Final() && !strings.Contains(why, string(out.Status)) {
			why += fmt.Sprintf(" (the request is already %s)", out.Status)
		}
		return ephemeral("Your vote was not counted: " + why + "."), true
	}
}

func ephemeral(text string) *discordgo.InteractionResponse {
	return &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{
			Content:         clip(text, maxContent),
			Flags:           discordgo.MessageFlagsEphemeral,
			AllowedMentions: noMentions(),
		},
	}
}

// gatewayEvidence is what the audit log keeps for an event that arrived
// over the bot's authenticated gateway connection.
func gatewayEvidence(event string, raw json.RawMessage) json.RawMessage {
	b, err := json.Marshal(struct {
		Via     string          `json:"via"`
		Event   string          `json:"event"`
		Payload json.RawMessage `json:"payload"`
	}{"gateway", event, raw})
	if err != nil { // raw did not come from a JSON decoder; keep it as text
		b, _ = json.Marshal(map[string]string{"via": "gateway", "event": event, "payload_text": string(raw)})
	}
	return b
}

// httpEvidence keeps the body byte for byte (as a string, so the audit's
// JSON encoding cannot reformat it) with the signature headers, so the
// signature can be checked again offline.
func httpEvidence(signature, timestamp string, body []byte) json.RawMessage {
	b, _ := json.Marshal(struct {
		Via       string `json:"via"`
		Signature string `json:"signature"`
		Timestamp string `json:"timestamp"`
		Body      string `json:"body"`
	}{"http", signature, timestamp, string(body)})
	return b
}
