package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/signoff/signoff/bot"
)

// Gateway is the part of bot.Service an agent integration needs: ask,
// then wait. The HTTP client (httpapi.Client) and bot.Gateway are both one.
type Gateway interface {
	Submit(ctx context.Context, n bot.NewRequest) (*bot.Request, error)
	// Wait returns the request once it is decided or d has passed.
	Wait(ctx context.Context, id string, d time.Duration) (*bot.Request, error)
}

// Classifier gives shell commands and tool calls their risk. The risk
// package's Classifier is one.
type Classifier interface {
	Command(cmd string) bot.Assessment
	ToolCall(tool string, input json.RawMessage, cwd string) bot.Assessment
}

// MustAsk reports whether an action of this level needs a person's
// approval before it runs: dangerous does, and so does any level this
// code does not know (fail closed). Safe and caution run.
func MustAsk(l bot.Level) bool {
	return l != bot.Safe && l != bot.Caution
}

// DefaultPoll is the longest single long-poll Await makes.
const DefaultPoll = 25 * time.Second

// deadlineGrace is how long past its deadline a request may still read
// pending (the gateway's sweeper has not run yet) before Await gives up.
const deadlineGrace = time.Minute

// ErrUndecided is returned by Await when the gateway still calls a
// request pending well after its deadline.
var ErrUndecided = errors.New("the gateway has not decided the request after its deadline")

// Await waits until r is decided and returns it. Before each long-poll
// (at most poll long; 0 means DefaultPoll) it calls progress, when not
// nil, with the request as last seen. An error — the gateway lost, ctx
// ended, no decision long after the deadline — means not approved.
func Await(ctx context.Context, g Gateway, r *bot.Request, poll time.Duration, progress func(*bot.Request)) (*bot.Request, error) {
	if poll <= 0 {
		poll = DefaultPoll
	}
	for !r.Status.Final() {
		left := time.Until(r.Deadline)
		if left < -deadlineGrace {
			return r, ErrUndecided
		}
		if progress != nil {
			progress(r)
		}
		wait := min(left+2*time.Second, poll)
		if wait < time.Second {
			wait = time.Second
		}
		next, err := waitThroughOutage(ctx, g, r, wait)
		if err != nil {
			if ctx.Err() != nil {
				return withdrawGone(g, r, ctx.Err()), ctx.Err()
			}
			return r, err
		}
		if next == nil || next.ID != r.ID {
			return r, fmt.Errorf("the gateway answered for another request")
		}
		r = next
	}
	return r, nil
}

// Waiting is a one-line account of a pending request: votes so far and
// the time left ("waiting: 1 vote (alice approve) · 4m10s left").
func Waiting(r *bot.Request, now time.Time) string {
	counted := 0
	var who []string
	for _, v := range r.Votes {
		if v.Result != bot.Counted {
			continue
		}
		counted++
		name := v.Name
		if name == "" {
			name = v.Voter.String()
		}
		who = append(who, name+" "+string(v.Choice))
	}
	left := max(r.Deadline.Sub(now).Round(time.Second), 0)
	s := fmt.Sprintf("waiting: %d vote", counted)
	if counted != 1 {
		s += "s"
	}
	if len(who) > 0 {
		s += " (" + strings.Join(who, ", ") + ")"
	}
	return s + fmt.Sprintf(" · %s left", left)
}

// errorText is an error as a user may see it: a *bot.Error's message,
// a deadline or cancellation said plainly, anything else generic.
func errorText(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "no decision in the time this integration may wait"
	case errors.Is(err, context.Canceled):
		return "interrupted while waiting"
	case errors.Is(err, ErrUndecided):
		return err.Error()
	}
	if e, ok := errors.AsType[*bot.Error](err); ok {
		return e.Message
	}
	return err.Error()
}

// reasonsText joins reasons for a sentence: "a; b", or the level alone.
func reasonsText(a bot.Assessment) string {
	if len(a.Reasons) == 0 {
		return string(a.Level)
	}
	return string(a.Level) + " (" + strings.Join(a.Reasons, "; ") + ")"
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Recorder logs an action that runs without asking; httpapi.Client is one.
type Recorder interface {
	Record(ctx context.Context, n bot.NewRequest) (bot.Assessment, error)
}

// LogCaution records a caution action on g's audit log when g can record
// and answers within 3 seconds. logged says it was recorded; insist is set
// when the gateway classifies the action as dangerous, so it must be asked
// after all. An unreachable gateway is neither: caution still runs.
func LogCaution(ctx context.Context, g any, n bot.NewRequest) (logged bool, insist *bot.Assessment) {
	rec, ok := g.(Recorder)
	if !ok || rec == nil {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	a, err := rec.Record(ctx, n)
	switch {
	case err == nil:
		return true, nil
	case bot.ErrorCode(err) == bot.EConflict:
		a.Level = bot.Dangerous
		if len(a.Reasons) == 0 {
			a.Reasons = []string{bot.ErrorMessage(err)}
		}
		return false, &a
	}
	return false, nil
}
