package bot

import "sync"

// memoMax bounds a memo: past it, everything it held is forgotten at once
// (what it answers is always also found the long way).
const memoMax = 4096

// memo is a bounded map of what this gateway knows without asking: the
// receipts it verified or signed, the decision records it appended, the
// requests it just sealed. The zero value is ready.
type memo[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

func (c *memo[V]) get(k string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

// take is get, forgetting k.
func (c *memo[V]) take(k string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	delete(c.m, k)
	return v, ok
}

func (c *memo[V]) put(k string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= memoMax {
		c.m = map[string]V{}
	}
	c.m[k] = v
}
