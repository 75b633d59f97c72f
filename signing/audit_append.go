package signing

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/signoff/signoff/bot"
)

// ChainAppender appends records to the shared chain in the store alone,
// without a file or a key: how a command run on the store (`signoff
// tokens` with SIGNOFF_REDIS_URL) records what it did. The gateways copy
// the record into their files and cover it with their next checkpoint.
type ChainAppender struct {
	Store ChainStore
	Now   func() time.Time
}

// ErrChainEmpty is returned when the store holds no chain to append to.
var ErrChainEmpty = errors.New("the store holds no audit chain (no gateway has run on it since it was emptied): start `signoff serve` on it first, so the chain it continues is the gateways' own")

// Append links e's record to the store's head and appends it there.
func (c *ChainAppender) Append(ctx context.Context, e bot.AuditEntry) error {
	r, err := newRecord(e)
	if err != nil {
		return err
	}
	for range 50 {
		seq, prev, err := c.Store.AuditHead(ctx)
		if err != nil {
			return fmt.Errorf("audit store: %w", err)
		}
		if seq == 0 {
			// An empty store may be one a gateway's file is about to
			// refill: a record here would fork the chain.
			return ErrChainEmpty
		}
		now := time.Now()
		if c.Now != nil {
			now = c.Now()
		}
		r.Seq, r.Prev, r.Time = seq+1, prev, now.UTC().Format(time.RFC3339Nano)
		d, err := r.digest()
		if err != nil {
			return fmt.Errorf("audit digest: %w", err)
		}
		r.Hash = hex.EncodeToString(d[:])
		line, err := r.line()
		if err != nil {
			return err
		}
		ok, err := c.Store.AppendAudit(ctx, r.Seq, r.Prev, r.Hash, line)
		if err != nil {
			return fmt.Errorf("audit store: %w", err)
		}
		if ok {
			return nil
		}
	}
	return errors.New("audit store: the chain's head kept moving")
}
