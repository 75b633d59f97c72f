package bot

import (
	"context"
	"log/slog"
	"time"
)

// FollowRetryEvery is how long KeepFollowing waits after a subscription
// ends before it follows again.
const FollowRetryEvery = time.Second

// KeepFollowing runs follow (a subscription that returns when it ends)
// again and again until ctx ends, logging each end that ctx did not
// cause as what ("decision watch", …) and waiting FollowRetryEvery.
func KeepFollowing(ctx context.Context, log *slog.Logger, what string, follow func(context.Context) error) {
	for ctx.Err() == nil {
		err := follow(ctx)
		if ctx.Err() != nil {
			return
		}
		log.Warn(what+" ended; retrying", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(FollowRetryEvery):
		}
	}
}
