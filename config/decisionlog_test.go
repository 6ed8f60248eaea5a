package config

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecisionLogSection(t *testing.T) {
	p := write(t, "gatehost.yaml", `
event_log: {path: logs/events.jsonl}
decision_log:
  http:
    url: https://logs.example/logs
    headers: {Authorization: "Bearer x"}
    timeout: 5s
    max_batch_bytes: 256KiB
    max_batch_events: 100
    flush_interval: 2s
    buffer_events: 5000
    min_backoff: 200ms
    max_backoff: 1m
  otlp: {endpoint: "collector:4318", insecure: true, headers: {x-api-key: k}}
  mask: [/result/findings/0/evidence, /input/session]
  cursor: state/export.cursor
`)
	l, err := Load(p)
	require.NoError(t, err)
	defer l.Close()
	d := l.DecisionLog
	require.True(t, d.Enabled())
	dir := filepath.Dir(p)
	assert.Equal(t, filepath.Join(dir, "state/export.cursor"), d.Cursor)
	assert.Equal(t, d.Cursor+".otlp", d.OTLPCursor())
	assert.Equal(t, []string{"/result/findings/0/evidence", "/input/session"}, d.Mask)
	assert.Equal(t, &DecisionLogHTTP{URL: "https://logs.example/logs", Headers: map[string]string{"authorization": "Bearer x"},
		Timeout: 5 * time.Second, MaxBatchBytes: 256 << 10, MaxBatchEvents: 100, FlushInterval: 2 * time.Second,
		BufferEvents: 5000, MinBackoff: 200 * time.Millisecond, MaxBackoff: time.Minute}, d.HTTP)
	assert.Equal(t, &DecisionLogOTLP{Endpoint: "collector:4318", Insecure: true, Headers: map[string]string{"x-api-key": "k"}}, d.OTLP)

	// Unset: no export; the cursor defaults beside the log.
	l2, err := Load(write(t, "gatehost.yaml", "event_log: {path: events.jsonl}\n"))
	require.NoError(t, err)
	assert.False(t, l2.DecisionLog.Enabled())
	l3, err := Load(write(t, "gatehost.yaml", "event_log: {path: events.jsonl}\ndecision_log: {http: {url: 'http://127.0.0.1:9/logs'}}\n"))
	require.NoError(t, err)
	assert.Equal(t, l3.LogPath+".export-cursor", l3.DecisionLog.Cursor)
	assert.Nil(t, l3.DecisionLog.OTLP)
}

func TestDecisionLogSectionErrors(t *testing.T) {
	for _, tc := range []struct{ section, want string }{
		{`{mask: [/a]}`, "decision_log: set decision_log.http.url or decision_log.otlp.endpoint"},
		{`{http: {timeout: 1s}}`, "decision_log.http.url: required"},
		{`{http: {url: "ftp://x"}}`, `decision_log.http.url: "ftp://x"`},
		{`{http: {url: "http://x", timeout: 10m}}`, "decision_log.http.timeout: out of range"},
		{`{http: {url: "http://x", max_batch_bytes: 10}}`, "decision_log.http.max_batch_bytes: out of range"},
		{`{http: {url: "http://x", max_batch_events: -1}}`, "decision_log.http.max_batch_events: out of range"},
		{`{http: {url: "http://x", flush_interval: 2h}}`, "decision_log.http.flush_interval: out of range"},
		{`{http: {url: "http://x", buffer_events: 100000000}}`, "decision_log.http.buffer_events: out of range"},
		{`{http: {url: "http://x", min_backoff: 1m, max_backoff: 1s}}`, "decision_log.http.min_backoff: 1m0s is above max_backoff 1s"},
		{`{http: {url: "http://x", max_backoff: 2h}}`, "decision_log.http.max_backoff: out of range"},
		{`{http: {url: "http://x", timeout: soon}}`, `decision_log.http.timeout`},
		{`{http: {url: "http://x", retries: 3}}`, "retries"},
		{`{otlp: {insecure: true}}`, "decision_log.otlp.endpoint: required"},
		{`{otlp: {endpoint: "grpc://c:4317"}}`, "decision_log.otlp.endpoint"},
		{`{otlp: {endpoint: "https://c:4318", insecure: true}}`, "decision_log.otlp.insecure"},
		{`{otlp: {endpoint: "c:4318"}, mask: [/hash]}`, "decision_log.mask[0]"},
		{`{otlp: {endpoint: "c:4318"}, mask: [result]}`, "decision_log.mask[0]"},
	} {
		_, err := Load(write(t, "gatehost.yaml", "event_log: {path: events.jsonl}\ndecision_log: "+tc.section+"\n"))
		require.Error(t, err, tc.section)
		assert.Contains(t, err.Error(), tc.want, tc.section)
	}
	_, err := Load(write(t, "gatehost.yaml", "store: {kind: postgres, dsn: 'postgres://x', node_id: n}\ndecision_log: {http: {url: 'http://x'}}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "decision_log: needs event_log.path")
}

func TestDecisionLogUnknownTopLevelKey(t *testing.T) {
	_, err := Load(write(t, "gatehost.yaml", "event_log: {path: events.jsonl}\ndecision_logs: {http: {url: 'http://x'}}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `: unknown key "decision_logs"; did you mean "decision_log"?`)
	assert.NotContains(t, err.Error(), "fileConfig")
}
