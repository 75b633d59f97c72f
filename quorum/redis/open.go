package redis

import (
	"context"
	"fmt"
	"net"
	"net/url"
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

// Embedded starts an in-process Redis (miniredis) and a client for it that
// needs no network. Nothing is kept when the process ends. Call the
// returned func to stop it.
//
// TTLs (only used to drop decided requests after the retention period)
// are advanced by a ticker rather than miniredis' ClockTTL, which would walk
// every key with a TTL on every command. Deadlines never rely on TTLs.
func Embedded() (goredis.UniversalClient, func(), error) {
	m := miniredis.NewMiniRedis()
	c := goredis.NewClient(&goredis.Options{
		Addr: "embedded",
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return m.Dial()
		},
		Protocol: 2,
		PoolSize: 256,
	})
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		const every = 10 * time.Second
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				m.FastForward(every)
			}
		}
	}()
	return c, func() { close(done); <-stopped; c.Close(); m.Close() }, nil
}
