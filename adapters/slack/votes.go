package slack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/signoff/signoff/bot"
)

// eventPayload is the part of an Events API payload signoff reads: the
// outer event_callback (or url_verification) and a reaction inside it.
type eventPayload struct {
	Type      string `json:"type"`
	Challenge string `json:"challenge"`
	EventID   string `json:"event_id"`
	Event     struct {
		Type     string `json:"type"`
		User     string `json:"user"`
		Reaction string `json:"reaction"`
		ItemUser string `json:"item_user"`
		Item     struct {
			Type    string `json:"type"`
			Channel string `json:"channel"`
			TS      string `json:"ts"`
		} `json:"item"`
	} `json:"event"`
}

// interactionPayload is the part of a block_actions payload signoff reads.
type interactionPayload struct {
	Type string `json:"type"`
	User struct {
		ID string `json:"id"`
	} `json:"user"`
	Channel struct {
		ID string `json:"id"`
	} `json:"channel"`
	Container struct {
		ChannelID string `json:"channel_id"`
		MessageTS string `json:"message_ts"`
	} `json:"container"`
	Message struct {
		TS string `json:"ts"`
	} `json:"message"`
	ResponseURL string `json:"response_url"`
	Actions     []struct {
		ActionID string `json:"action_id"`
		BlockID  string `json:"block_id"`
		Value    string `json:"value"`
		ActionTS string `json:"action_ts"`
	} `json:"actions"`
}

// errMalformed marks a payload that is not what Slack sends: 400, or an
// acknowledged and dropped envelope in Socket Mode.
var errMalformed = errors.New("malformed slack payload")

// freshWindow is how long after a card is posted a reaction to an unknown
// message of the bot's is retried rather than dropped: the gateway records
// a card's ref only once Post has returned.
const freshWindow = time.Minute

// onEvent handles one Events API payload. It returns the challenge of a
// url_verification. A nil error means "acknowledge": the event was counted,
// ignored, or is not a vote. errMalformed means the payload is bad; any
// other error is transient and Slack should redeliver.
func (a *Adapter) onEvent(ctx context.Context, raw []byte, evidence json.RawMessage) (challenge string, err error) {
	var p eventPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", errMalformed
	}
	switch p.Type {
	case "url_verification":
		if p.Challenge == "" {
			return "", errMalformed
		}
		return p.Challenge, nil
	case "event_callback":
	default:
		return "", nil // app_rate_limited and the like
	}
	ev := p.Event
	if ev.Type == "message" {
		dedup := p.EventID
		if dedup == "" {
			dedup = digest(raw)
		}
		return "", a.onThreadReply(ctx, raw, dedup, evidence)
	}
	switch {
	case ev.Type == "reaction_removed":
		return "", nil // a removed reaction changes nothing
	case ev.Type != "reaction_added", ev.Item.Type != "message":
		return "", nil
	case !slackID(ev.User) || !slackID(ev.Item.Channel) || !slackTS(ev.Item.TS):
		return "", errMalformed
	}
	own := a.ownUser(ctx)
	if own != "" && ev.User == own {
		return "", nil // the bot's own ✅ / ❌ on its card
	}
	dedup := p.EventID
	if dedup == "" {
		dedup = digest(raw)
	}
	b := bot.Ballot{
		Ref:      bot.MessageRef{Platform: bot.Slack, Channel: ev.Item.Channel, ID: ev.Item.TS},
		Voter:    bot.Identity{Platform: bot.Slack, ID: ev.User},
		Choice:   reactionChoice(ev.Reaction),
		Proof:    bot.ProofPlatform,
		DedupKey: "slack:" + dedup,
		Evidence: evidence,
	}
	out, err := a.cast(ctx, b)
	switch {
	case err == nil:
		a.log.Debug("slack reaction", "request", out.RequestID, "voter", ev.User, "reaction", ev.Reaction, "result", out.Result, "reason", out.Reason)
		return "", nil
	case bot.ErrorCode(err) == bot.ENotFound:
		if own != "" && ev.ItemUser == own && a.fresh(ev.Item.TS) {
			return "", err // our card, not recorded yet: let Slack redeliver
		}
		return "", nil // a reaction to some other message
	case permanent(err):
		a.log.Info("slack reaction refused", "voter", ev.User, "err", err)
		return "", nil
	}
	return "", err
}

// reply is an ephemeral answer to the person who clicked.
type reply struct {
	channel, user, responseURL, text string
}

// onInteraction handles one interactivity payload: an Approve or Deny
// click becomes a ballot naming the request in the button's value. It
// returns what to tell the clicker (nil: nothing), or errMalformed.
func (a *Adapter) onInteraction(ctx context.Context, raw []byte, evidence json.RawMessage) (*reply, error) {
	var p interactionPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, errMalformed
	}
	if p.Type != "block_actions" {
		return nil, nil
	}
	for _, act := range p.Actions {
		var choice bot.Choice
		switch act.ActionID {
		case actionApprove:
			choice = bot.Approve
		case actionAlways:
			choice = bot.Always
		case actionDeny:
			choice = bot.Deny
		default:
			continue
		}
		if !slackID(p.User.ID) {
			return nil, errMalformed
		}
		channel, ts := p.Container.ChannelID, p.Container.MessageTS
		if channel == "" {
			channel = p.Channel.ID
		}
		if ts == "" {
			ts = p.Message.TS
		}
		stamp := act.ActionTS
		if stamp == "" {
			stamp = digest(raw)
		}
		b := bot.Ballot{
			RequestID: act.Value,
			Ref:       bot.MessageRef{Platform: bot.Slack, Channel: channel, ID: ts},
			Voter:     bot.Identity{Platform: bot.Slack, ID: p.User.ID},
			Choice:    choice,
			Proof:     bot.ProofPlatform,
			DedupKey:  "slack:action:" + stamp + ":" + p.User.ID,
			Evidence:  evidence,
		}
		switch {
		case channel != "" && !slackID(channel), ts != "" && !slackTS(ts):
			return nil, errMalformed
		case b.RequestID == "" && (channel == "" || ts == ""):
			return nil, errMalformed
		case b.RequestID != "" && !slackID(b.RequestID):
			return nil, errMalformed
		}
		rep := &reply{channel: channel, user: p.User.ID, responseURL: p.ResponseURL}
		out, err := a.cast(ctx, b)
		if err != nil {
			a.log.Warn("slack click not recorded", "request", b.RequestID, "voter", p.User.ID, "err", err)
			switch {
			case bot.ErrorCode(err) == bot.ENotFound:
				rep.text = "This request is no longer known to signoff."
			case permanent(err):
				rep.text = "signoff did not take this vote: " + bot.ErrorMessage(err)
			default:
				rep.text = "signoff could not record your vote just now; please try again."
			}
			return rep, nil
		}
		a.log.Debug("slack click", "request", out.RequestID, "voter", p.User.ID, "vote", choice, "result", out.Result, "reason", out.Reason)
		rep.text = a.clickAnswer(ctx, b.RequestID, choice, out)
		if rep.text == "" {
			return nil, nil
		}
		return rep, nil
	}
	return nil, nil
}

// clickAnswer says what became of a click; "" when the card itself will
// show it (the click decided) or the click was a redelivery.
func (a *Adapter) clickAnswer(ctx context.Context, id string, choice bot.Choice, out bot.VoteOutcome) string {
	switch {
	case out.Decided, out.Result == bot.Duplicate:
		return ""
	case out.Status.Final():
		return "already decided: " + a.outcome(ctx, id, out.Status)
	case out.Result == bot.Counted:
		return "Your " + string(choice) + " is counted; the request is still pending."
	}
	why := out.Reason
	if why == "" {
		why = "you may not vote on this request"
	}
	return "Your vote was not counted: " + why
}

// outcome describes a decided request: who decided and when, when the
// sink can tell (the gateway can), else just the status.
func (a *Adapter) outcome(ctx context.Context, id string, s bot.Status) string {
	if g, ok := a.sink.(interface {
		Get(context.Context, string) (*bot.Request, error)
	}); ok && id != "" {
		if r, err := g.Get(ctx, id); err == nil && r.Status.Final() {
			return bot.Outcome(r)
		}
	}
	return string(s)
}

func (a *Adapter) cast(ctx context.Context, b bot.Ballot) (bot.VoteOutcome, error) {
	ctx, cancel := context.WithTimeout(ctx, voteTimeout)
	defer cancel()
	return a.sink.CastVote(ctx, b)
}

// sendReply tells the clicker privately: chat.postEphemeral with the bot
// token, else the interaction's response_url.
func (a *Adapter) sendReply(ctx context.Context, rep *reply) {
	if rep == nil || rep.text == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, replyTimeout)
	defer cancel()
	var err error
	switch {
	case a.cfg.BotToken != "" && rep.channel != "":
		_, err = a.api.PostEphemeralContext(ctx, rep.channel, rep.user, slackapi.MsgOptionText(rep.text, true))
	case strings.HasPrefix(rep.responseURL, "https://") || strings.HasPrefix(rep.responseURL, "http://"):
		err = slackapi.PostWebhookCustomHTTPContext(ctx, rep.responseURL, a.hc, &slackapi.WebhookMessage{
			Text: rep.text, ResponseType: slackapi.ResponseTypeEphemeral,
		})
	default:
		return
	}
	if err != nil {
		a.log.Warn("reply to slack click", "voter", rep.user, "err", err)
	}
}

// reactionChoice reads a reaction name; skin tones do not matter.
func reactionChoice(name string) bot.Choice {
	if i := strings.Index(name, "::"); i >= 0 {
		name = name[:i]
	}
	switch name {
	case "white_check_mark", "heavy_check_mark":
		return bot.Approve
	case "x", "negative_squared_cross_mark":
		return bot.Deny
	}
	return bot.Other
}

// slackID accepts what Slack and signoff use as ids (U…, C…, request
// ids): 1 to 64 ASCII letters, digits, '_' or '-'.
func slackID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// slackTS accepts a message timestamp: digits, a dot, digits.
func slackTS(s string) bool {
	secs, frac, ok := strings.Cut(s, ".")
	return ok && digits(secs, 12) && digits(frac, 9)
}

func digits(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// fresh reports whether a message ts is within freshWindow of now.
func (a *Adapter) fresh(ts string) bool {
	secs, _, _ := strings.Cut(ts, ".")
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return false
	}
	age := a.now().Sub(time.Unix(n, 0))
	return age > -freshWindow && age < freshWindow
}

// permanent reports whether a CastVote error will be the same on a retry.
func permanent(err error) bool {
	switch bot.ErrorCode(err) {
	case bot.EInvalid, bot.ENotFound, bot.EConflict, bot.EForbidden, bot.EUnauthorized, bot.EStale, bot.ETooLarge:
		return true
	}
	return false
}

func digest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:12])
}
