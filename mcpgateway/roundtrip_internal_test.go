package mcpgateway

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSpentNonces: a nonce is spent once; when the set is full of
// unexpired nonces a new one is refused (the form is asked again), and
// expired ones make room.
func TestSpentNonces(t *testing.T) {
	var s spentNonces
	later := time.Now().Add(time.Hour)
	assert.True(t, s.spend("a", later))
	assert.False(t, s.spend("a", later), "spent once")
	for i := range maxSpentNonces - 1 {
		s.spend("n"+strconv.Itoa(i), later)
	}
	assert.False(t, s.spend("b", later), "full of unexpired nonces: refused")

	var e spentNonces
	for i := range maxSpentNonces {
		e.spend("n"+strconv.Itoa(i), time.Now().Add(-time.Second))
	}
	assert.True(t, e.spend("b", later), "expired nonces make room")
	assert.Len(t, e.m, 1)
}
