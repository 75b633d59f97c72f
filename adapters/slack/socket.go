package slack

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/slack-go/slack/socketmode"
)

// socketWorkers bounds how many Socket Mode envelopes are handled at once.
const socketWorkers = 16

// Run receives reactions and clicks over Socket Mode until ctx ends. It
// reconnects by itself (on a disconnect request, a dead socket or missed
// pings) and returns nil once ctx is done and every handler has finished,
// or an error when Slack refuses the app-level token, which retrying
// cannot fix.
func (a *Adapter) Run(ctx context.Context) error {
	if a.cfg.AppToken == "" {
		return errors.New("slack: socket mode needs an app-level token")
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	sm := socketmode.New(a.api)
	fatal := make(chan error, 1)
	wg.Go(func() {
		// RunContext retries connection failures itself; it returns only
		// when ctx ends or the token is refused.
		if err := sm.RunContext(ctx); ctx.Err() == nil {
			fatal <- err
		}
	})
	sem := make(chan struct{}, socketWorkers)
	for {
		var evt socketmode.Event
		select {
		case <-ctx.Done():
			return nil
		case err := <-fatal:
			a.log.Error("slack socket mode stopped", "err", err)
			return err
		case evt = <-sm.Events:
		}
		switch evt.Type {
		case socketmode.EventTypeEventsAPI, socketmode.EventTypeInteractive:
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			wg.Go(func() {
				defer func() { <-sem }()
				a.handleEnvelope(ctx, sm, evt)
			})
		case socketmode.EventTypeErrorBadMessage:
			// A payload slack-go could not parse: acknowledge it so it is
			// not redelivered forever.
			bad, _ := evt.Data.(*socketmode.ErrorBadMessage)
			if bad != nil {
				var env struct {
					EnvelopeID string `json:"envelope_id"`
				}
				if json.Unmarshal(bad.Message, &env) == nil && env.EnvelopeID != "" {
					a.ack(ctx, sm, env.EnvelopeID)
				}
				a.log.Warn("slack socket mode: unreadable envelope", "err", bad.Cause)
			}
		case socketmode.EventTypeSlashCommand:
			if evt.Request != nil {
				a.ack(ctx, sm, evt.Request.EnvelopeID)
			}
		case socketmode.EventTypeConnected:
			a.log.Info("slack socket mode connected")
		case socketmode.EventTypeConnectionError:
			a.log.Warn("slack socket mode connection failed; retrying", "err", evt.Data)
		case socketmode.EventTypeInvalidAuth:
			a.log.Error("slack socket mode: the app-level token was refused")
		case socketmode.EventTypeIncomingError, socketmode.EventTypeErrorWriteFailed:
			a.log.Warn("slack socket mode error", "type", evt.Type, "err", evt.Data)
		default:
			a.log.Debug("slack socket mode", "type", evt.Type)
		}
	}
}

// handleEnvelope records one envelope's vote, acknowledges it and answers
// the clicker. An event whose vote could not be recorded for a passing
// reason is not acknowledged, so Slack redelivers it (and it counts once).
func (a *Adapter) handleEnvelope(ctx context.Context, sm *socketmode.Client, evt socketmode.Event) {
	req := evt.Request
	if req == nil {
		return
	}
	evidence := socketEvidence(req)
	switch evt.Type {
	case socketmode.EventTypeEventsAPI:
		_, err := a.onEvent(ctx, req.Payload, evidence)
		if err != nil && !errors.Is(err, errMalformed) {
			a.log.Warn("slack event not recorded; leaving it for redelivery", "envelope", req.EnvelopeID, "err", err)
			return
		}
		a.ack(ctx, sm, req.EnvelopeID)
	case socketmode.EventTypeInteractive:
		rep, err := a.onInteraction(ctx, req.Payload, evidence)
		a.ack(ctx, sm, req.EnvelopeID)
		if err != nil {
			a.log.Warn("slack interaction unreadable", "envelope", req.EnvelopeID, "err", err)
			return
		}
		a.sendReply(ctx, rep)
	}
}

func (a *Adapter) ack(ctx context.Context, sm *socketmode.Client, envelope string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := sm.AckCtx(ctx, envelope, nil); err != nil {
		a.log.Warn("slack socket mode ack", "envelope", envelope, "err", err)
	}
}

// socketEvidence is what the audit log keeps of a Socket Mode delivery:
// the envelope's id and its payload, as received on the bot's
// authenticated connection.
func socketEvidence(req *socketmode.Request) json.RawMessage {
	payload := req.Payload
	if !json.Valid(payload) {
		payload = json.RawMessage("null")
	}
	raw, _ := json.Marshal(struct {
		Transport    string          `json:"transport"`
		EnvelopeID   string          `json:"envelope_id"`
		RetryAttempt int             `json:"retry_attempt,omitempty"`
		Payload      json.RawMessage `json:"payload"`
	}{"socket_mode", req.EnvelopeID, req.RetryAttempt, payload})
	return raw
}
