package redis

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
)

// Open connects to the Redis named by rawURL:
//
//	redis://[user:pass@]host:port[/db]            one server
//	rediss://…                                     the same over TLS
//	redis://host:port?addr=host2:port&addr=…       a Cluster
//	redis://sentinel:26379?master_name=mymaster    Sentinel (more with &addr=)
func Open(rawURL string) (goredis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("SIGNOFF_REDIS_URL is not a URL: %w", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("SIGNOFF_REDIS_URL must start with redis:// or rediss://, not %s://", u.Scheme)
	}
	q := u.Query()
	switch {
	case q.Get("master_name") != "":
		o, err := goredis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("sentinel URL: %w", err)
		}
		return goredis.NewFailoverClient(o), nil
	case q.Has("addr"):
		o, err := goredis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("cluster URL: %w", err)
		}
		return goredis.NewClusterClient(o), nil
	}
	o, err := goredis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	return goredis.NewClient(o), nil
}

// Embedded starts an in-process Redis (miniredis) with TTLs following the
// wall clock, and a client for it that needs no network. Nothing is kept
// when the process ends. Call the returned func to stop it.
func Embedded() (goredis.UniversalClient, func(), error) {
	m, stop := StartEmbedded()
	c := EmbeddedClient(m)
	return c, func() { c.Close(); stop() }, nil
}

// StartEmbedded starts the in-process server Embedded uses. Its TTLs are
// advanced by the wall clock once a second rather than by miniredis's
// ClockTTL, which walks and sorts every key with a TTL on every command,
// so a vote's cost grew with the number of requests kept. TTLs here are
// retention periods (deadlines live in a sorted set), so a second's
// resolution is plenty. Call stop to end it.
func StartEmbedded() (m *miniredis.Miniredis, stop func()) {
	m = miniredis.NewMiniRedis()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	})
	var once sync.Once
	return m, func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			m.Close()
		})
	}
}

// EmbeddedClient returns a client for m that dials it in process.
func EmbeddedClient(m *miniredis.Miniredis) *goredis.Client {
	return goredis.NewClient(&goredis.Options{
		Addr: "embedded",
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			c, err := m.Dial()
			if err != nil {
				return nil, err
			}
			return newAsyncConn(c), nil
		},
		Protocol: 2,
	})
}
