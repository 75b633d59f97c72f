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
	t := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/v1/nostr/events", bytes.NewReader(f.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if err := f.post(nil, req); err != nil {
		return fmt.Errorf("bench: floor HTTP: %w", err)
	}
	s.HTTP = append(s.HTTP, time.Since(t))

	t = time.Now()
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

	req, err = http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+seriesPath, bytes.NewReader(f.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	t = time.Now()
	if err := f.post(nil, req); err != nil {
		return fmt.Errorf("bench: the floor's pieces in series: %w", err)
	}
	s.Series = append(s.Series, time.Since(t))

	raw, err := f.min.reaction(ctx, 0)
	if err != nil {
		return err
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+minimumPath, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	t = time.Now()
	if err := f.post(nil, req); err != nil {
		return fmt.Errorf("bench: the design's minimum vote: %w", err)
	}
	s.Minimum = append(s.Minimum, time.Since(t))
	return nil
}

// post sends req with hc (the floor's client when nil) and reads its
// answer, which must be a counted vote.
func (f *floor) post(hc *http.Client, req *http.Request) error {
	if hc == nil {
		hc = f.hc
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"result":"counted"`)) {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return nil
}
