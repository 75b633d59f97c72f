package signing

import (
	"errors"
	"fmt"
	"strconv"
	"time"

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

// parseUnixSeconds accepts only what Slack and Discord send: 1 to 12
// decimal digits, no sign, no spaces.
func parseUnixSeconds(ts string) (int64, bool) {
	if len(ts) == 0 || len(ts) > 12 {
		return 0, false
	}
	for i := 0; i < len(ts); i++ {
		if ts[i] < '0' || ts[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	return n, err == nil
}

// checkWindow refuses a signed timestamp further than window from now,
// either way, with the platform's stale sentinel.
func checkWindow(ts string, secs int64, now time.Time, window time.Duration, stale error) error {
	skew := now.Sub(time.Unix(secs, 0))
	if skew > window || skew < -window {
		return &RequestError{Err: stale, Detail: fmt.Sprintf("timestamp %s is %s from the gateway clock", ts, skew.Round(time.Second))}
	}
	return nil
}
