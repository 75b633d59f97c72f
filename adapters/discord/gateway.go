package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/signoff/signoff/bot"
)

// Run connects to the Discord gateway and keeps the connection up until
// ctx ends: after a drop it reconnects (resuming the session when Discord
// allows), and after every connect it reads the reactions on pending
// requests' messages, so answers given while it was away are counted. It
// returns nil when ctx ends, after closing the connection and waiting for
// the events in flight; an error only when it cannot start (no bot token,
// the token refused, called twice).
func (a *Adapter) Run(ctx context.Context) error {
	if a.session == nil {
		return ErrNoBotToken
	}
	a.mu.Lock()
	if a.running {
		a.mu.Unlock()
		return errors.New("discord: Run is already running")
	}
	a.running, a.stopping, a.runCtx = true, false, ctx
	a.mu.Unlock()
	defer a.stop()

	if err := a.whoAmI(ctx); err != nil || ctx.Err() != nil {
		return err
	}
	wait := a.cfg.ReconnectMin
	for {
		err := a.session.Open()
		if err == nil || errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			if err == nil {
				a.log.Info("gateway connected")
				a.catchUp(ctx)
				if a.caughtUp != nil {
					a.caughtUp()
				}
			}
			wait = a.cfg.ReconnectMin
			select {
			case <-ctx.Done():
				return nil
			case <-a.disconnected:
				if ctx.Err() == nil {
					a.log.Warn("gateway disconnected; reconnecting")
				}
				continue
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		a.log.Warn("gateway connect failed", "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, a.cfg.ReconnectMax)
	}
}

// stop closes the gateway connection and waits for every event handler
// discordgo started; later deliveries are dropped.
func (a *Adapter) stop() {
	if err := a.session.Close(); err != nil {
		a.log.Debug("close gateway", "err", err)
	}
	a.mu.Lock()
	a.stopping = true
	a.mu.Unlock()
	a.handlers.Wait()
	a.mu.Lock()
	a.running, a.runCtx = false, nil
	a.mu.Unlock()
	select { // a stale signal must not disturb a later Run
	case <-a.disconnected:
	default:
	}
}

func (a *Adapter) isStopping() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopping
}

// begin registers an event handler with Run; it is false once Run is
// stopping (or not running), and the event is dropped.
func (a *Adapter) begin() (context.Context, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopping || a.runCtx == nil {
		return nil, false
	}
	a.handlers.Add(1)
	// An event already received is finished even while Run stops: the
	// vote is not lost, and it is bounded by EventTimeout.
	return context.WithoutCancel(a.runCtx), true
}

// whoAmI learns the bot's own user id, so its reactions never count. It
// retries until ctx ends, except when the token is refused.
func (a *Adapter) whoAmI(ctx context.Context) error {
	wait := a.cfg.ReconnectMin
	for {
		u, err := a.session.User("@me", discordgo.WithContext(ctx))
		if err == nil {
			a.setBotID(u.ID)
			a.log.Info("bot identity", "user", u.ID)
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		var re *discordgo.RESTError
		if errors.As(err, &re) && re.Response != nil &&
			(re.Response.StatusCode == http.StatusUnauthorized || re.Response.StatusCode == http.StatusForbidden) {
			return fmt.Errorf("discord: the bot token was refused: %w", err)
		}
		a.log.Warn("read the bot's identity", "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, a.cfg.ReconnectMax)
	}
}

// onEvent receives every gateway dispatch with its raw payload, which is
// what the audit keeps as evidence.
func (a *Adapter) onEvent(s *discordgo.Session, e *discordgo.Event) {
	switch e.Type {
	case "READY":
		var ready struct {
			User userPayload `json:"user"`
		}
		if json.Unmarshal(e.RawData, &ready) == nil && snowflake(ready.User.ID) {
			a.setBotID(ready.User.ID)
		}
		return
	case "MESSAGE_REACTION_ADD", "INTERACTION_CREATE", "MESSAGE_CREATE":
	default:
		return
	}
	base, ok := a.begin()
	if !ok {
		return
	}
	defer a.handlers.Done()
	ctx, cancel := context.WithTimeout(base, a.cfg.EventTimeout)
	defer cancel()
	evidence := gatewayEvidence(e.Type, e.RawData)

	if e.Type == "MESSAGE_CREATE" {
		a.onReply(ctx, e.RawData, evidence)
		return
	}
	if e.Type == "MESSAGE_REACTION_ADD" {
		var rp reactionPayload
		if err := json.Unmarshal(e.RawData, &rp); err != nil {
			a.log.Warn("malformed reaction event", "err", err)
			return
		}
		if b, ok := a.reactionBallot(&rp, evidence); ok {
			a.castReaction(ctx, b)
		}
		return
	}

	var in interactionPayload
	if err := json.Unmarshal(e.RawData, &in); err != nil {
		a.log.Warn("malformed interaction event", "err", err)
		return
	}
	if in.Type != discordgo.InteractionMessageComponent || in.ID == "" || in.Token == "" {
		return // pings and commands are not ours
	}
	if a.cfg.AppID != "" && in.AppID != a.cfg.AppID {
		a.log.Warn("interaction for another application", "app", in.AppID)
		return
	}
	resp, respond := a.click(ctx, &in, evidence, false)
	if !respond {
		return
	}
	err := s.InteractionRespond(&discordgo.Interaction{ID: in.ID, Token: in.Token}, resp, discordgo.WithContext(ctx))
	if err != nil {
		// Another replica may have answered first; the vote stands.
		a.log.Debug("answer interaction", "interaction", in.ID, "err", err)
	}
}

// catchUp reads the ✅ and ❌ reactions on every pending request's
// message and casts them. Reactions already counted are duplicates by
// their DedupKey, so reading everything again is safe.
func (a *Adapter) catchUp(ctx context.Context) {
	targets := a.pendingTargets(ctx)
	if len(targets) == 0 {
		return
	}
	n := 0
	for _, t := range targets {
		for _, emoji := range []string{emojiApprove, emojiDeny} {
			after := ""
			for page := 0; page < 50; page++ { // at most 5000 voters an emoji
				users, err := a.session.MessageReactions(t.ref.Channel, t.ref.ID, emoji, 100, "", after, discordgo.WithContext(ctx))
				if err != nil {
					if ctx.Err() == nil {
						a.log.Warn("read reactions", "id", t.requestID, "channel", t.ref.Channel, "message", t.ref.ID, "emoji", emoji, "err", err)
					}
					break
				}
				for _, u := range users {
					if u == nil {
						continue
					}
					rp := reactionPayload{UserID: u.ID, ChannelID: t.ref.Channel, MessageID: t.ref.ID}
					rp.Emoji.Name = emoji
					b, ok := a.reactionBallot(&rp, reactionsEvidence(t.ref, emoji, u))
					if !ok {
						continue
					}
					b.RequestID = t.requestID
					ectx, cancel := context.WithTimeout(ctx, a.cfg.EventTimeout)
					a.castReaction(ectx, b)
					cancel()
					n++
				}
				if len(users) < 100 || ctx.Err() != nil {
					break
				}
				after = users[len(users)-1].ID
			}
		}
	}
	a.log.Info("reactions re-read after connect", "messages", len(targets), "reactions", n)
}

// pendingTargets lists the messages to re-read: those of the requests
// Config.Pending reports, or else those this process posted that have not
// passed their deadline.
func (a *Adapter) pendingTargets(ctx context.Context) []pendingMessage {
	now := a.cfg.Now()
	if a.cfg.Pending != nil {
		reqs, err := a.cfg.Pending(ctx)
		if err == nil {
			var out []pendingMessage
			live, pendingIDs := map[string]bool{}, map[string]bool{}
			for _, r := range reqs {
				if r == nil || r.Status != bot.Pending {
					continue
				}
				pendingIDs[r.ID] = true
				for _, m := range r.Messages {
					if m.Platform == bot.Discord && !live[m.Key()] {
						live[m.Key()] = true
						out = append(out, pendingMessage{ref: m, requestID: r.ID, deadline: r.Deadline})
					}
				}
			}
			a.mu.Lock()
			for k, p := range a.pending {
				switch {
				case !pendingIDs[p.requestID]: // decided, perhaps by another replica
					delete(a.pending, k)
				case !live[k]: // posted; the store has not recorded it yet
					live[k] = true
					out = append(out, p)
				}
			}
			a.mu.Unlock()
			return out
		}
		a.log.Warn("list pending requests", "err", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []pendingMessage
	for k, p := range a.pending {
		if now.After(p.deadline) {
			delete(a.pending, k)
			continue
		}
		out = append(out, p)
	}
	return out
}

func reactionsEvidence(ref bot.MessageRef, emoji string, u *discordgo.User) json.RawMessage {
	b, _ := json.Marshal(struct {
		Via       string `json:"via"`
		ChannelID string `json:"channel_id"`
		MessageID string `json:"message_id"`
		Emoji     string `json:"emoji"`
		User      any    `json:"user"`
	}{"reactions", ref.Channel, ref.ID, emoji, u})
	return b
}
