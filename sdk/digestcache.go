package sdk

import "sync"

// digestCache remembers values of one digest by key: a put under another
// digest, or past max values, empties it first, so an instance's memory
// stays flat however many digests and keys its runs bring. get answers
// only for the digest the values were put under. The mutex is for native
// use; in a guest there is one thread.
type digestCache[V any] struct {
	max    int
	mu     sync.Mutex
	digest string
	m      map[string]V
}

func (c *digestCache[V]) get(digest, key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	if !ok || c.digest != digest {
		var zero V
		return zero, false
	}
	return v, true
}

// getBytes is get(digest, string(key)) without copying key: Go indexes a
// map with a converted []byte in place only when the conversion is
// written in the index expression.
func (c *digestCache[V]) getBytes(digest string, key []byte) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[string(key)]
	if !ok || c.digest != digest {
		var zero V
		return zero, false
	}
	return v, true
}

func (c *digestCache[V]) put(digest, key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.digest != digest || len(c.m) >= c.max {
		c.m, c.digest = map[string]V{}, digest
	}
	c.m[key] = v
}
