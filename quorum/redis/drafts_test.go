package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/netpolicy"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// TestOldDraftsAreDroppedAndMakeRoom: a draft whose last refusal is older
// than DraftTTL is no longer listed, and a store full of such drafts still
// takes a new destination (an agent that probed hosts last month does not
// keep this week's refusals from being drafted).
func TestOldDraftsAreDroppedAndMakeRoom(t *testing.T) {
	defer qredis.SetMaxDrafts(20)()
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			s := bottest.Start(t, backend).Store(t)
			ctx := context.Background()
			old := time.Now().Add(-netpolicy.DraftTTL - time.Hour).UTC().Truncate(time.Millisecond)
			draft := func(host string, at time.Time) (netpolicy.Draft, error) {
				d := netpolicy.Dest{Host: host, Port: 443}
				return s.PutDraft(ctx, netpolicy.Draft{ID: bot.NewID(), Persona: "demo", Dest: d, Reason: netpolicy.DraftReason(d), Count: 1, First: at, Last: at})
			}
			for i := range 20 {
				if _, err := draft(fmt.Sprintf("old%d.example", i), old); err != nil {
					t.Fatalf("old draft %d: %v", i, err)
				}
			}
			got, err := draft("new.example", time.Now().UTC())
			if err != nil {
				t.Fatalf("a new destination in a store full of old drafts: %v", err)
			}
			ds, err := s.Drafts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != 1 || ds[0].ID != got.ID {
				t.Fatalf("drafts %+v, want only the new one", ds)
			}
			// Full of live drafts: refused, as before.
			for i := range 19 {
				if _, err := draft(fmt.Sprintf("live%d.example", i), time.Now().UTC()); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := draft("one-too-many.example", time.Now().UTC()); bot.ErrorCode(err) != bot.EUnavailable {
				t.Fatalf("past the bound with live drafts: %v, want unavailable", err)
			}
		})
	}
}
