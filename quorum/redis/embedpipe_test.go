package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/quorum/quorumtest"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// TestLongActionDoesNotHangEmbeddedStore: an agent's action of a few KiB
// (a tool call's input) used to deadlock the embedded store: the client
// wrote the MULTI pipeline into a synchronous pipe while the server wrote
// its first reply back.
func TestLongActionDoesNotHangEmbeddedStore(t *testing.T) {
	rdb, stop, err := qredis.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	s := qredis.New(rdb, "t")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range 20 {
		now := time.Now()
		r := &bot.Request{ID: bot.NewID(), Persona: "demo", Kind: bot.KindTool, Action: strings.Repeat("x", 12<<10),
			Status: bot.Pending, CreatedAt: now, Deadline: now.Add(time.Hour), Votes: []bot.Vote{}}
		if err := s.Create(ctx, r, quorumtest.Persona(2, 1)); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
}
