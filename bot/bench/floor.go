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
// of the reaction by the gateway's own function, one Redis round trip.
type floor struct {
	srv  *httptest.Server
	hc   *http.Client
	rdb  goredis.UniversalClient
	body []byte
	at   time.Time
	// key signs target's reactions (the bench client's cost per vote)
	key    *signing.Key
	target string
}

func newFloor(ctx context.Context, rdb goredis.UniversalClient, k *signing.Key) (*floor, error) {
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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"result":"counted"}`+"\n")
	}))
	return &floor{srv: srv, hc: &http.Client{Transport: transport(4)}, rdb: rdb, body: body, at: at, key: k, target: hex.EncodeToString(target)}, nil
}

func (f *floor) close() { f.srv.Close() }

// FloorStats holds the floor's samples. Sign, not part of the floor, is
// what the bench client spends signing one reaction before it posts it.
type FloorStats struct {
	HTTP, Verify, Redis []time.Duration
	Sign                []time.Duration
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
	resp, err := f.hc.Do(req)
	if err != nil {
		return fmt.Errorf("bench: floor HTTP: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
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
	return nil
}
