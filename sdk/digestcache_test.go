package sdk

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A digestCache answers only for the digest its values were put under,
// and never holds more than max values.
func TestDigestCache(t *testing.T) {
	c := &digestCache[int]{max: 3}
	c.put("d1", "a", 1)
	c.put("d1", "b", 2)
	v, ok := c.get("d1", "a")
	assert.True(t, ok)
	assert.Equal(t, 1, v)
	_, ok = c.get("d2", "a")
	assert.False(t, ok, "another digest")
	v, ok = c.getBytes("d1", []byte("b"))
	assert.True(t, ok)
	assert.Equal(t, 2, v)
	_, ok = c.getBytes("d2", []byte("b"))
	assert.False(t, ok, "another digest, by bytes")

	c.put("d2", "a", 10)
	_, ok = c.get("d1", "b")
	assert.False(t, ok, "a put under another digest empties the cache")
	for i := range 10 {
		c.put("d2", strconv.Itoa(i), i)
		assert.LessOrEqual(t, len(c.m), c.max)
	}
	v, ok = c.get("d2", "9")
	assert.True(t, ok, "the newest value is kept")
	assert.Equal(t, 9, v)
}
