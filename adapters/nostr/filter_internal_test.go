package nostr

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

func TestFiltersChunkIDsAndReachBackToOldestRequest(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a, err := New(Config{Key: signing.NewKey(), Now: func() time.Time { return now }, SinceMargin: time.Minute}, sinkFunc(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.filters(); ok {
		t.Fatalf("filters with nothing pending")
	}
	var want []string
	for i := range 600 {
		id := fmt.Sprintf("%064x", i)
		want = append(want, id)
		a.watch(&bot.Request{ID: fmt.Sprint("r", i), CreatedAt: now.Add(-time.Duration(i) * time.Second), Deadline: now.Add(time.Hour)}, []string{id})
	}
	fs, ok := a.filters()
	if !ok || len(fs) != 3 {
		t.Fatalf("got %d filters, want 3 of at most %d ids", len(fs), maxIDsPerFilter)
	}
	var got []string
	oldest := now.Add(-599*time.Second - time.Minute).Unix()
	for _, f := range fs {
		got = append(got, f.Tags["e"]...)
		if f.Since == nil || int64(*f.Since) != oldest || !slices.Equal(f.Kinds, []int{7, 1}) {
			t.Errorf("filter since %v kinds %v, want since %d (oldest request minus margin), kinds 7 and 1", f.Since, f.Kinds, oldest)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("filters name %d ids, want the %d watched", len(got), len(want))
	}
	a.unwatch("r599")
	fs, _ = a.filters()
	if int64(*fs[0].Since) != now.Add(-598*time.Second-time.Minute).Unix() {
		t.Errorf("since did not move forward after the oldest request was decided")
	}
}

type sinkFunc func(bot.Ballot) (bot.VoteOutcome, error)

func (f sinkFunc) CastVote(_ context.Context, b bot.Ballot) (bot.VoteOutcome, error) { return f(b) }
