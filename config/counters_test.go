package config

import (
	"os"
	"path/filepath"
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

// TestPolicyStageWindowsWithoutCatalog: a built-in policy stage declaring a
// window the host does not count refuses the config whatever the catalog:
// without a file catalog, and in the MCP gateway's pipeline, where the
// policies themselves are checked later (every call would otherwise be
// inconclusive, counters_unavailable).
func TestPolicyStageWindowsWithoutCatalog(t *testing.T) {
	plugins := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(plugins, "policy.wasm"), []byte("m"), 0o644))
	t.Setenv(PluginDirEnv, plugins)
	for _, tc := range []struct{ name, head string }{
		{"no catalog", ""},
		{"the gateway's pipeline", "mcp: {pipeline: calls}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := func(windows string) string {
				return tc.head + `event_log: {path: e.jsonl}
counters: {windows: [1h]}
plugins: {cedar: {builtin: policy}}
pipelines:
  calls:
    subject: tool_call
    stages: [{plugin: cedar, capabilities: [catalog, counters], config: {windows: [` + windows + `], policies: [{file: p.cedar, text: 'permit(principal, action, resource);'}]}}]
`
			}
			l, err := Load(write(t, "g.yaml", doc("1h")))
			require.NoError(t, err)
			require.NoError(t, l.Close())
			_, err = Load(write(t, "g.yaml", doc("2h")))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "pipelines.calls.stages[0].config.windows: window 2h is not one the host counts")
		})
	}
}
