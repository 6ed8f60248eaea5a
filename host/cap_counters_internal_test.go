package host

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/counter"
	"github.com/gatehost/gatehost/internal/abischema"
)

// TestCountersAnswer: counters.get names every tool of the snapshot in
// every map, keeps a count of a tool the snapshot no longer holds, and
// answers as the ABI's schema says; a failed read answers unavailable with
// the fixed text.
func TestCountersAnswer(t *testing.T) {
	store, err := catalog.NewStore(
		catalog.Tool{ID: "mcp.mail:send_email", Name: "send_email", InputSchema: json.RawMessage(`{"type":"object"}`)},
		catalog.Tool{ID: "mcp.mail:read_inbox", Name: "read_inbox", InputSchema: json.RawMessage(`{"type":"object"}`)},
	)
	require.NoError(t, err)
	h := &Host{windows: []time.Duration{time.Hour, 24 * time.Hour}}
	pc := &pinnedCounts{counts: counter.Counts{
		Session:   map[string]int64{"mcp.mail:send_email": 4, "mcp.old:gone": 1},
		Window:    map[time.Duration]map[string]int64{time.Hour: {"mcp.mail:send_email": 2}},
		Principal: map[time.Duration]map[string]int64{24 * time.Hour: {"mcp.mail:read_inbox": 7}},
	}}
	rc := &runContext{host: h, snap: store.Snapshot(), session: "s1", counts: pc}
	res, err := countersCapability{}.call(context.Background(), rc, abi.OpCountersGet, []byte(`{}`))
	require.NoError(t, err)
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.NoError(t, abischema.Validate(abi.SchemaCounters, b), string(b))
	zero := map[string]int64{"mcp.mail:send_email": 0, "mcp.mail:read_inbox": 0}
	assert.Equal(t, abi.CountersGetAnswer{
		Session: "s1",
		Calls:   map[string]int64{"mcp.mail:send_email": 4, "mcp.mail:read_inbox": 0, "mcp.old:gone": 1},
		Windows: map[string]abi.CounterWindow{
			"1h": {Calls: map[string]int64{"mcp.mail:send_email": 2, "mcp.mail:read_inbox": 0}},
			"1d": {Calls: zero},
		},
		Principal: map[string]abi.CounterWindow{
			"1h": {Calls: zero},
			"1d": {Calls: map[string]int64{"mcp.mail:send_email": 0, "mcp.mail:read_inbox": 7}},
		},
	}, res)

	_, err = countersCapability{}.call(context.Background(), rc, "counters.put", []byte(`{}`))
	assert.ErrorContains(t, err, "unknown operation")
	rc.counts = &pinnedCounts{err: errCounterStore}
	_, err = countersCapability{}.call(context.Background(), rc, abi.OpCountersGet, []byte(`{}`))
	assert.Equal(t, errCounterStore, err)
	rc.counts = nil
	_, err = countersCapability{}.call(context.Background(), rc, abi.OpCountersGet, []byte(`{}`))
	assert.Equal(t, errCounterStore, err, "no counts pinned: unavailable, never zeros")
}

func TestCounterWindowsConfig(t *testing.T) {
	assert.NoError(t, checkWindows([]time.Duration{time.Minute, time.Hour}))
	assert.ErrorContains(t, checkWindows([]time.Duration{time.Hour, 60 * time.Minute}), "given twice")
	assert.ErrorContains(t, checkWindows([]time.Duration{time.Millisecond}), "counters.windows[0]")
	assert.ErrorContains(t, checkWindows(make([]time.Duration, MaxCounterWindows+1)), "at most")
}
