package redis

import (
	"context"
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
)

// SetMaxDrafts lowers the bound on drafts for a test; the returned func
// puts it back.
func SetMaxDrafts(n int64) func() {
	old := maxDrafts
	maxDrafts = n
	return func() { maxDrafts = old }
}

// LegacyVoteScript is the vote script of the version before a request's
// voters and deliveries moved into its hash, as that version ran it.
func LegacyVoteScript(t testing.TB) string {
	b, err := os.ReadFile("testdata/vote-before-hash-fields.lua")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// RecordVoteWith is RecordVote running src as the vote script (another
// version's, as a replica of that version would).
func (s *Store) RecordVoteWith(ctx context.Context, b bot.Ballot, src string) (bot.VoteOutcome, error) {
	out, _, err := s.runVote(ctx, b, goredis.NewScript(src), nil, nil)
	return out, err
}
