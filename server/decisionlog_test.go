package server

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/eventlog"
)

// decisionReceiver is an OPA decision-log service keeping what it is sent.
type decisionReceiver struct {
	mu     sync.Mutex
	events []map[string]any
}

func (rc *decisionReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	b, _ := io.ReadAll(zr)
	var batch []map[string]any
	if json.Unmarshal(b, &batch) != nil || r.Header.Get("Authorization") != "Bearer s3cret" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.events = append(rc.events, batch...)
	rc.mu.Unlock()
}

func (rc *decisionReceiver) got() []map[string]any {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]map[string]any(nil), rc.events...)
}

func TestDecisionLogExportFromServe(t *testing.T) {
	rc := &decisionReceiver{}
	recv := httptest.NewServer(rc)
	t.Cleanup(recv.Close)
	dir := t.TempDir()
	cfg := writeServeConfig(t, dir, serveParams{limits: fmt.Sprintf(`decision_log:
  http: {url: %q, headers: {Authorization: "Bearer s3cret"}, flush_interval: 10ms}
  mask: [/input/subject_sha256]
`, recv.URL+"/logs")})
	ts := startServe(t, cfg, nil)
	ts.do(t, "POST", "/v1/pipelines/admission/check", readThenWrite)
	ts.do(t, "POST", "/v1/pipelines/admission/check", readFile(t, "testdata/proposals/bad-args-and-unknown-tool.json"))
	require.Eventually(t, func() bool { return len(rc.got()) >= 2 }, time.Minute, 5*time.Millisecond)
	evs := rc.got()
	assert.Equal(t, "accepted", evs[0]["result"].(map[string]any)["verdict"])
	assert.Equal(t, "rejected", evs[1]["result"].(map[string]any)["verdict"])
	assert.Equal(t, "gatehost/admission", evs[0]["path"])
	assert.Equal(t, "[masked]", evs[0]["input"].(map[string]any)["subject_sha256"])
	logPath := filepath.Join(dir, "events.jsonl")
	for _, ev := range evs {
		rep, err := eventlog.Verify(logPath, eventlog.VerifyOptions{Anchor: ev["hash"].(string)})
		require.NoError(t, err)
		assert.Equal(t, uint64(ev["seq"].(float64)), rep.AnchorSeq)
	}
	require.Eventually(t, func() bool {
		m := string(ts.do(t, "GET", "/metrics", nil).body)
		return strings.Contains(m, `gatehost_decision_log_exported_total{sink="http"} 2`)
	}, time.Minute, 5*time.Millisecond)
	m := string(ts.do(t, "GET", "/metrics", nil).body)
	for _, want := range []string{
		`gatehost_decision_log_dropped_total{reason="buffer_full",sink="http"} 0`,
		`gatehost_decision_log_failures_total{sink="http"} 0`,
		`gatehost_decision_log_buffered{sink="http"} 0`,
		`gatehost_decision_log_stopped{sink="http"} 0`,
	} {
		assert.Contains(t, m, want)
	}
	require.NoError(t, ts.stop(t))
	b, err := os.ReadFile(logPath + ".export-cursor")
	require.NoError(t, err)
	assert.Contains(t, string(b), evs[1]["hash"].(string), "the cursor is at the last decision")
}

func TestDecisionLogBadCursorFailsNew(t *testing.T) {
	dir := t.TempDir()
	cfg := writeServeConfig(t, dir, serveParams{limits: "decision_log: {http: {url: 'http://127.0.0.1:9/logs'}, cursor: export.cursor}\n"})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "export.cursor"), []byte("garbage"), 0o600))
	_, err := New(Options{ConfigPath: cfg}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "decision_log: http: decisionlog: bad cursor file")
	// Everything New opened was closed: no descriptor of the log is left
	// (where /proc tells), and the log can be opened again.
	logPath := filepath.Join(dir, "events.jsonl")
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		for _, fd := range fds {
			target, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
			assert.NotEqual(t, logPath, target, "the event log is still open")
		}
	}
	l, err := eventlog.Open(logPath, eventlog.Options{LockTimeout: -1})
	require.NoError(t, err)
	require.NoError(t, l.Close())
}
