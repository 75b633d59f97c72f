package redis

import (
	"context"
	"fmt"
	"net"
	"net/url"

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
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	c := goredis.NewClient(&goredis.Options{
		Addr: "embedded",
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return m.Dial()
		},
		Protocol: 2,
	})
	return c, func() { c.Close(); m.Close() }, nil
}
