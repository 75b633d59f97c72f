package redis

import (
	"context"
	"encoding/json"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
)

var _ bot.ReceiptStore = (*Store)(nil)

// saveReceiptScript keeps the first receipt of a decided request and
// announces it. KEYS: 1 request hash. ARGV: 1 receipt, 2 channel, 3 id.
// Returns 1 when saved, 0 when the request is missing, still pending, or
// already has one.
var saveReceiptScript = goredis.NewScript(`
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == 'pending' then return 0 end
if redis.call('HSETNX', KEYS[1], 'receipt', ARGV[1]) == 0 then return 0 end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
`)

// SaveReceipt stores the gateway's signed receipt beside the decided
// request and wakes every waiter on it.
func (s *Store) SaveReceipt(ctx context.Context, id string, raw json.RawMessage) error {
	if err := saveReceiptScript.Run(ctx, s.rdb, s.requestKeys(id)[:1], []byte(raw), s.channel(), id).Err(); err != nil {
		return unavailable("save receipt", err)
	}
	return nil
}
