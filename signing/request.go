package signing

import (
	"errors"

	"github.com/signoff/signoff/bot"
)

// RequestError is a refused platform request (Slack, Discord): Err is one
// of the platform's sentinels (ErrSlack…, ErrDiscord…), Detail says what
// exactly was wrong. It also unwraps to a *bot.Error (code stale for a
// timestamp outside the replay window, unauthorized otherwise), so
// bot.ErrorCode works on it.
type RequestError struct {
	Err    error
	Detail string
}

func (e *RequestError) Error() string {
	if e.Detail == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + ": " + e.Detail
}

func (e *RequestError) Unwrap() []error {
	code := bot.EUnauthorized
	if errors.Is(e.Err, ErrSlackStale) || errors.Is(e.Err, ErrDiscordStale) {
		code = bot.EStale
	}
	return []error{e.Err, &bot.Error{Code: code, Message: e.Error()}}
}
