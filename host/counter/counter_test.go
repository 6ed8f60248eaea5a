package counter_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/counter"
)

func TestMemStore(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := counter.NewMemStore(24 * time.Hour)
	alice := counter.PrincipalKey("iss", "alice")
	add := func(sess, p, tool string, at time.Time) {
		require.NoError(t, m.Add(ctx, counter.Call{Session: sess, Principal: p, Tool: tool, At: at}))
	}
	add("s1", alice, "a:x", t0)
	add("s1", alice, "a:x", t0.Add(30*time.Minute))
	add("s2", alice, "a:x", t0.Add(50*time.Minute))
	add("s1", "", "a:y", t0.Add(55*time.Minute))
	add("", alice, "a:y", t0.Add(56*time.Minute))

	c, err := m.Counts(ctx, counter.Query{Session: "s1", Principal: alice, Windows: []time.Duration{time.Hour, 10 * time.Minute}, Now: t0.Add(70 * time.Minute)})
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"a:x": 2, "a:y": 1}, c.Session)
	assert.Equal(t, map[string]int64{"a:x": 1, "a:y": 1}, c.Window[time.Hour], "the call at t0 is out of the hour")
	assert.Equal(t, map[string]int64{}, c.Window[10*time.Minute])
	assert.Equal(t, map[string]int64{"a:x": 2, "a:y": 1}, c.Principal[time.Hour], "across sessions")

	// Past the retention the calls are dropped from the windows, not the
	// session's total.
	add("s1", alice, "a:x", t0.Add(48*time.Hour))
	c, err = m.Counts(ctx, counter.Query{Session: "s1", Principal: alice, Windows: []time.Duration{24 * time.Hour}, Now: t0.Add(48 * time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"a:x": 3, "a:y": 1}, c.Session)
	assert.Equal(t, map[string]int64{"a:x": 1}, c.Window[24*time.Hour])

	// No session, no principal: nothing.
	c, err = m.Counts(ctx, counter.Query{Windows: []time.Duration{time.Hour}, Now: t0})
	require.NoError(t, err)
	assert.Empty(t, c.Session)
	assert.Empty(t, c.Window[time.Hour])
	assert.Empty(t, c.Principal[time.Hour])
}

func TestPrincipalKey(t *testing.T) {
	assert.Empty(t, counter.PrincipalKey("iss", ""))
	assert.NotEqual(t, counter.PrincipalKey("a", "b\x00c"), counter.PrincipalKey("a\x00b", "c"))
}
