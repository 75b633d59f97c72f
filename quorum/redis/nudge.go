package redis

import (
	"context"
	"time"

	"github.com/signoff/signoff/bot"
)

var _ bot.NudgeStore = (*Store)(nil)

// ClaimNudge reports whether this call is the first to claim what (a
// reminder's number, the escalation) for request id.
func (s *Store) ClaimNudge(ctx context.Context, id, what string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.key("req", "{"+id+"}", "nudge", what), 1, ttl).Result()
	if err != nil {
		return false, unavailable("claim reminder", err)
	}
	return ok, nil
}
