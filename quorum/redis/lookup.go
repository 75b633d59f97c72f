package redis

import "sync"

// maxRefs bounds the replica's memory of message → request: past it the
// map starts again empty and misses ask Redis.
const maxRefs = 100000

// refCache maps the messages of the requests this replica created or
// posted to their request ids, so a vote arriving here finds its request
// without a round trip to Redis (the vote's e tag names the request's
// event). A message belongs to one request for good, so an entry never
// goes stale in a way that matters: a request gone from Redis is still
// refused by the vote script ("missing"), and a miss asks Redis.
type refCache struct {
	mu sync.Mutex
	m  map[string]string
}

func (c *refCache) put(key, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxRefs {
		c.m = make(map[string]string)
	}
	c.m[key] = id
}

func (c *refCache) get(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.m[key]
	return id, ok
}
