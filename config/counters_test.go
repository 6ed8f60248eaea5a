package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCountersWindows(t *testing.T) {
	l, err := Load(write(t, "gatehost.yaml", "event_log: {path: e.jsonl}\ncounters: {windows: [1m, 1h, 24h, 7d]}\n"))
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, []time.Duration{time.Minute, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}, l.Host.CounterWindows)

	l, err = Load(write(t, "gatehost.yaml", "event_log: {path: e.jsonl}\n"))
	require.NoError(t, err)
	defer l.Close()
	assert.Empty(t, l.Host.CounterWindows)

	for _, bad := range []string{"[1ms]", "[90d]", "[soon]"} {
		_, err := Load(write(t, "gatehost.yaml", "event_log: {path: e.jsonl}\ncounters: {windows: "+bad+"}\n"))
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "counters.windows[0]", bad)
	}
}

func TestPolicyWindows(t *testing.T) {
	assert.NoError(t, policyWindows([]time.Duration{time.Hour}, []string{"60m", "1h"}))
	err := policyWindows([]time.Duration{time.Hour}, []string{"1d"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "window 1d is not one the host counts")
}
