package compose_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/compose"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host/eventlog"
)

// receiver keeps the decision-log events it is sent (gzip JSON batches).
type receiver struct {
	mu     sync.Mutex
	events []map[string]any
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	b, _ := io.ReadAll(zr)
	var batch []map[string]any
	if json.Unmarshal(b, &batch) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.events = append(rc.events, batch...)
	rc.mu.Unlock()
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.events)
}

func load(t *testing.T, body string) *config.Loaded {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gatehost.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	l, err := config.Load(p)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// TestOpenFileStore: Open points the host config at the event log it
// opened (teed to the decision-log export when asked) and Close closes the
// parts: the log can be opened again afterwards.
func TestOpenFileStore(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	l := load(t, "event_log: {path: events.jsonl}\ndecision_log: {http: {url: "+srv.URL+", flush_interval: 10ms}}\n")
	rt, err := compose.Open(context.Background(), l, compose.Options{ExportDecisions: true})
	require.NoError(t, err)
	require.NotNil(t, rt.Store)
	require.NotNil(t, rt.DecisionLogs)
	hc := rt.Host()
	require.NotNil(t, hc.EventLog)
	assert.Empty(t, hc.EventLogPath, "the host appends to the runtime's log, it opens none")
	_, err = hc.EventLog.Append(eventlog.Record{Kind: eventlog.KindDecision, RunID: "0123456789abcdef0123456789abcdef", Pipeline: "p",
		Data: json.RawMessage(`{"verdict":"accepted"}`)})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return rc.count() == 1 }, time.Minute, 10*time.Millisecond, "exported through the tee")
	require.NoError(t, rt.Close())
	require.NoError(t, rt.Close(), "twice is fine")
	log, err := eventlog.Open(l.LogPath, eventlog.Options{})
	require.NoError(t, err, "closed: the log opens again")
	require.NoError(t, log.Close())
}

// TestOpenWithoutExport: a one-shot command opens no exporter.
func TestOpenWithoutExport(t *testing.T) {
	l := load(t, "event_log: {path: events.jsonl}\ndecision_log: {http: {url: 'http://127.0.0.1:9/logs'}}\n")
	rt, err := compose.Open(context.Background(), l, compose.Options{})
	require.NoError(t, err)
	defer rt.Close()
	assert.Nil(t, rt.DecisionLogs)
}

// TestOpenRefusesBadParts: a part that cannot be opened is an error naming
// the config key, and what was opened before it is closed again.
func TestOpenRefusesBadParts(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "export.cursor"), []byte("garbage"), 0o600))
	l := load(t, "event_log: {path: "+filepath.Join(dir, "events.jsonl")+"}\ndecision_log: {http: {url: 'http://127.0.0.1:9/logs'}, cursor: "+filepath.Join(dir, "export.cursor")+"}\n")
	_, err := compose.Open(context.Background(), l, compose.Options{ExportDecisions: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "decision_log: http")
	log, err := eventlog.Open(l.LogPath, eventlog.Options{})
	require.NoError(t, err, "the log Open opened was closed again")
	require.NoError(t, log.Close())
}

// TestFileStoreHeadInterval: event_log.head_interval reaches the file log.
// With the head in every commit it names a record as soon as the append
// returns; with an interval it trails until the store closes.
func TestFileStoreHeadInterval(t *testing.T) {
	for _, tc := range []struct {
		interval string
		// the head's seq right after the append
		want uint64
	}{{"0s", 1}, {"1m", 0}} {
		t.Run(tc.interval, func(t *testing.T) {
			l := load(t, "event_log: {path: events.jsonl, head_interval: "+tc.interval+"}\n")
			rt, err := compose.Open(context.Background(), l, compose.Options{})
			require.NoError(t, err)
			_, err = rt.Host().EventLog.Append(eventlog.Record{Kind: eventlog.KindDecision, RunID: "0123456789abcdef0123456789abcdef", Pipeline: "p",
				Data: json.RawMessage(`{"verdict":"accepted"}`)})
			require.NoError(t, err)
			rep, err := eventlog.Verify(l.LogPath)
			require.NoError(t, err)
			assert.Equal(t, uint64(1), rep.LastSeq)
			assert.Equal(t, tc.want, rep.HeadSeq)
			require.NoError(t, rt.Close())
			rep, err = eventlog.Verify(l.LogPath)
			require.NoError(t, err)
			assert.Equal(t, uint64(1), rep.HeadSeq, "closing brings the head up")
		})
	}
}
