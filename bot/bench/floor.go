package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// floor measures what a vote cannot avoid: one loopback HTTP round trip
// (a trivial handler, same client settings, same body), one verification
// of the reaction by the gateway's own function, one Redis round trip;
// and, on the same server, those pieces in series and the design's
// minimum vote (minimum.go).
type floor struct {
	srv *httptest.Server
	min *minimum
	// scratch starts every key the minimum writes.
	scratch string
	hc      *http.Client
	rdb     goredis.UniversalClient
	body    []byte
	at      time.Time
	// key signs target's reactions (the bench client's cost per vote)
	key    *signing.Key
	target string
}

func newFloor(ctx context.Context, rdb goredis.UniversalClient, voters []*signing.Key) (*floor, error) {
	k := voters[0]
	target := make([]byte, 32)
	rand.Read(target)
	at := time.Now()
	body, err := signing.NewReactionWithReason(k, hex.EncodeToString(target), k.PublicKey(), bot.Approve, "", at)
	if err != nil {
		return nil, err
	}
	if _, err := signing.ParseReaction(body, at); err != nil {
		return nil, fmt.Errorf("bench: the floor's reaction does not verify: %w", err)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("bench: Redis does not answer PING: %w", err)
	}
	scratch := scratchPrefix()
	min := newMinimum(rdb, scratch, voters)
	f := &floor{min: min, scratch: scratch, hc: &http.Client{Transport: transport(4)}, rdb: rdb, body: body, at: at, key: k, target: hex.EncodeToString(target)}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/nostr/events", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"result":"counted"}`+"\n")
	})
	mux.Handle(seriesPath, series(rdb))
	mux.Handle(minimumPath, min.handler(0))
	mux.Handle(minimumPath+"/{client}", min.handler(-1))
	f.srv = httptest.NewServer(mux)
	return f, nil
}

// close stops the floor's server and deletes the minimum's scratch keys.
func (f *floor) close(ctx context.Context) error {
	f.srv.Close()
	return deleteScratch(ctx, f.rdb, f.scratch)
}

// FloorStats holds the floor's samples. Sign, not part of the floor, is
// what the bench client spends signing one reaction before it posts it.
// Series is the floor's pieces in one handler, Minimum the design's
// minimum vote (minimum.go): each a POST's round trip as the client sees
// it, as the vote path is.
type FloorStats struct {
	HTTP, Verify, Redis []time.Duration
	Sign                []time.Duration
	Series, Minimum     []time.Duration
}

// P50 is the floor: the sum of its pieces' medians.
func (s *FloorStats) P50() time.Duration {
	return pct(s.HTTP, 50) + pct(s.Verify, 50) + pct(s.Redis, 50)
}

func (f *floor) sample(ctx context.Context, s *FloorStats) error {
	d, err := f.post(ctx, nil, "/v1/nostr/events", f.body)
	if err != nil {
		return fmt.Errorf("bench: floor HTTP: %w", err)
	}
	s.HTTP = append(s.HTTP, d)

	t := time.Now()
	if _, err := signing.NewReactionWithReason(f.key, f.target, f.key.PublicKey(), bot.Approve, "", f.at); err != nil {
		return err
	}
	s.Sign = append(s.Sign, time.Since(t))

	t = time.Now()
	if _, err := signing.ParseReaction(f.body, f.at); err != nil {
		return err
	}
	s.Verify = append(s.Verify, time.Since(t))

	t = time.Now()
	if err := f.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("bench: floor Redis PING: %w", err)
	}
	s.Redis = append(s.Redis, time.Since(t))

	if d, err = f.post(ctx, nil, seriesPath, f.body); err != nil {
		return fmt.Errorf("bench: the floor's pieces in series: %w", err)
	}
	s.Series = append(s.Series, d)

	raw, err := f.min.reaction(ctx, 0)
	if err != nil {
		return err
	}
	if d, err = f.post(ctx, nil, minimumPath, raw); err != nil {
		return fmt.Errorf("bench: the design's minimum vote: %w", err)
	}
	s.Minimum = append(s.Minimum, d)
	return nil
}

// post sends body to path on the floor's server with hc (the floor's
// client when nil), as a vote is sent, and reads the answer, which must be
// a counted vote. It returns the time from before the request was built
// to the answer read, as the vote path is timed.
func (f *floor) post(ctx context.Context, hc *http.Client, path string, body []byte) (time.Duration, error) {
	if hc == nil {
		hc = f.hc
	}
	t := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(t)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"result":"counted"`)) {
		return 0, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return d, nil
}
