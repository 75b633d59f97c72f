package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/signing"
)

// TestMinimumDoesAVotesWork: each of the design's minimum votes the floor
// samples is verified, tallied and audited by the real vote script (the
// scratch chain holds a record a vote, and every third decides a request
// of three voters), bad input is refused with a clear error and changes
// nothing, and closing the floor leaves no scratch key behind.
func TestMinimumDoesAVotesWork(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			rdb := bottest.Start(t, backend).Client(t)
			voters := []*signing.Key{signing.NewKey(), signing.NewKey(), signing.NewKey()}
			f, err := newFloor(ctx, rdb, voters)
			if err != nil {
				t.Fatal(err)
			}
			var s FloorStats
			for range 6 {
				if err := f.sample(ctx, &s); err != nil {
					t.Fatal(err)
				}
			}
			if len(s.Minimum) != 6 || len(s.Series) != 6 {
				t.Fatalf("samples: %d minimum, %d series, want 6 each", len(s.Minimum), len(s.Series))
			}
			st := f.min.store
			records := func() int {
				recs, err := st.AuditRecords(ctx, 0, 100)
				if err != nil {
					t.Fatal(err)
				}
				return len(recs)
			}
			if n := records(); n != 6 {
				t.Errorf("the scratch chain holds %d records after 6 votes", n)
			}
			last, err := st.Get(ctx, f.min.clients[0].id)
			if err != nil {
				t.Fatal(err)
			}
			if last.Status != bot.Approved || len(last.Votes) != 3 {
				t.Errorf("the second scratch request is %s with %d votes, want approved by its 3 voters", last.Status, len(last.Votes))
			}

			// Bad input: a body that is no event, a reaction to another
			// event.
			f.min.clients[0].next = 0
			if _, err := f.min.reaction(ctx, 0); err != nil { // a new request, its first vote not sent
				t.Fatal(err)
			}
			other, _ := signing.NewReactionWithReason(voters[1], strings.Repeat("ab", 32), f.min.gateway, bot.Approve, "", f.at)
			for _, c := range []struct {
				body []byte
				code int
				says string
			}{
				{[]byte(`{"kind":7`), http.StatusBadRequest, "JSON"},
				{other, http.StatusNotFound, "not the minimum's request"},
			} {
				resp, err := http.Post(f.srv.URL+minimumPath, "application/json", bytes.NewReader(c.body))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != c.code || !bytes.Contains(bytes.ToLower(b), bytes.ToLower([]byte(c.says))) {
					t.Errorf("POST %.20q: %s %q, want %d saying %q", c.body, resp.Status, b, c.code, c.says)
				}
			}
			if n := records(); n != 6 {
				t.Errorf("refused votes changed the scratch chain: %d records", n)
			}

			if err := f.close(ctx); err != nil {
				t.Fatal(err)
			}
			if keys, err := rdb.Keys(ctx, f.scratch+":*").Result(); err != nil || len(keys) != 0 {
				t.Errorf("after close: scratch keys %v (%v)", keys, err)
			}
		})
	}
}
