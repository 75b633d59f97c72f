package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/signoff/signoff/bot"
)

// Timeouts for work on behalf of one inbound event. Slack wants an answer
// within 3 seconds and redelivers otherwise; redeliveries count once.
const (
	voteTimeout  = 2500 * time.Millisecond
	replyTimeout = 10 * time.Second
)

// Reactions added to every card so people can tap them.
var cardReactions = []string{"white_check_mark", "x"}

// Adapter posts requests to Slack and hands answers to a bot.VoteSink. It
// is a bot.Channel. Create it with New.
type Adapter struct {
	cfg  Config
	sink bot.VoteSink
	api  *slackapi.Client
	hc   *http.Client
	log  *slog.Logger

	mu      sync.Mutex
	botUser string // the bot's own user id, learnt from auth.test
}

var _ bot.Channel = (*Adapter)(nil)

// New returns an adapter for cfg that casts ballots on sink. It does no
// I/O; call Check to test the bot token at start-up.
func New(cfg Config, sink bot.VoteSink) (*Adapter, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, errors.New("slack: a vote sink is required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	opts := []slackapi.Option{slackapi.OptionAPIURL(cfg.apiURL()), slackapi.OptionHTTPClient(hc)}
	if cfg.AppToken != "" {
		opts = append(opts, slackapi.OptionAppLevelToken(cfg.AppToken))
	}
	return &Adapter{
		cfg:  cfg,
		sink: sink,
		api:  slackapi.New(cfg.BotToken, opts...),
		hc:   hc,
		log:  log.With("platform", "slack"),
	}, nil
}

func (a *Adapter) now() time.Time {
	if a.cfg.Now != nil {
		return a.cfg.Now()
	}
	return time.Now()
}

// Check calls auth.test with the bot token and remembers the bot's user
// id (so the bot's own ✅ / ❌ on its cards are not taken as votes).
func (a *Adapter) Check(ctx context.Context) error {
	if a.cfg.BotToken == "" {
		return errors.New("slack: no bot token configured")
	}
	res, err := a.api.AuthTestContext(ctx)
	if err != nil {
		return fmt.Errorf("slack: auth.test: %w", err)
	}
	a.mu.Lock()
	a.botUser = res.UserID
	a.mu.Unlock()
	a.log.Info("slack bot authenticated", "team", res.TeamID, "bot_user", res.UserID)
	return nil
}

// ownUser returns the bot's user id, asking Slack once if it is not
// known yet; "" when it cannot be learnt.
func (a *Adapter) ownUser(ctx context.Context) string {
	a.mu.Lock()
	id := a.botUser
	a.mu.Unlock()
	if id != "" || a.cfg.BotToken == "" {
		return id
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := a.Check(ctx); err != nil {
		a.log.Warn("learn the bot's own user id", "err", err)
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botUser
}

// Post puts r in the Slack channel c.Target as a card and adds the ✅ and
// ❌ reactions to it. It returns the message's ref (channel and ts).
func (a *Adapter) Post(ctx context.Context, r *bot.Request, p bot.Persona, c bot.ChannelConfig) ([]bot.MessageRef, error) {
	if a.cfg.BotToken == "" {
		return nil, errors.New("slack: no bot token configured, so nothing can be posted")
	}
	if c.Target == "" {
		return nil, fmt.Errorf("slack: persona %s names a Slack channel without an id", p.Name)
	}
	a.ownUser(ctx)
	ch, ts, err := a.api.PostMessageContext(ctx, c.Target,
		slackapi.MsgOptionText(requestText(r), false), // escaped by requestText
		slackapi.MsgOptionBlocks(requestCard(r)...),
		slackapi.MsgOptionDisableLinkUnfurl(),
		slackapi.MsgOptionDisableMediaUnfurl(),
	)
	if err != nil {
		return nil, fmt.Errorf("slack: post to %s: %w", c.Target, err)
	}
	ref := bot.MessageRef{Platform: bot.Slack, Channel: ch, ID: ts}
	for _, name := range cardReactions {
		if err := a.api.AddReactionContext(ctx, name, slackapi.NewRefToMessage(ch, ts)); err != nil {
			// Only a convenience: people can still react or click.
			a.log.Warn("add reaction to card", "id", r.ID, "channel", ch, "ts", ts, "reaction", name, "err", err)
			break
		}
	}
	return []bot.MessageRef{ref}, nil
}

// Update edits every posted card to show r's outcome, who decided and
// when, without buttons. It tries every ref and returns their errors
// joined; the gateway retries and never changes the decision.
func (a *Adapter) Update(ctx context.Context, r *bot.Request, refs []bot.MessageRef) error {
	if a.cfg.BotToken == "" {
		return errors.New("slack: no bot token configured, so cards cannot be edited")
	}
	var errs []error
	for _, ref := range refs {
		if ref.Platform != bot.Slack {
			continue
		}
		_, _, _, err := a.api.UpdateMessageContext(ctx, ref.Channel, ref.ID,
			slackapi.MsgOptionText(decidedText(r), true),
			slackapi.MsgOptionBlocks(decidedCard(r)...),
		)
		if err != nil {
			errs = append(errs, fmt.Errorf("slack: update %s/%s: %w", ref.Channel, ref.ID, err))
		}
	}
	return errors.Join(errs...)
}
