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

// PendingIDs names the pending requests, as List does for Status Pending
// (at most 10,000, soonest deadline first), without reading them.
func (s *Store) PendingIDs(ctx context.Context) ([]string, error) {
	ids, err := s.rdb.ZRange(ctx, s.key("pending"), 0, maxListed-1).Result()
	if err != nil {
		return nil, unavailable("list requests", err)
	}
	return ids, nil
}
