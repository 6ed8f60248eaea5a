package decisionlog

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/eventlog"
)

// deadline is a hang guard for bounded polling, never a timing assertion.
const deadline = 60 * time.Second

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// fixture is a real event log in a temporary directory.
type fixture struct {
	dir, logPath, cursorPath string
	log                      *eventlog.Log
	runs                     int
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, logPath: filepath.Join(dir, "events.jsonl"), cursorPath: filepath.Join(dir, "export.cursor")}
	l, err := eventlog.Open(f.logPath, eventlog.Options{NoSync: true, Logger: discard()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	f.log = l
	return f
}

// run appends one run as the host records it: a stage record, then the
// decision record, in one append. Every third run is inconclusive.
func (f *fixture) run(t testing.TB, to eventlog.Appender) []eventlog.Record {
	t.Helper()
	recs, err := to.Append(f.runRecords()...)
	require.NoError(t, err)
	return recs
}

// runRecords are the records of the next run, before they are appended.
func (f *fixture) runRecords() []eventlog.Record {
	f.runs++
	id := fmt.Sprintf("run-%04d", f.runs)
	verdict, reason := "rejected", ""
	if f.runs%3 == 0 {
		verdict, reason = "inconclusive", "plugin_timeout"
	}
	stage := fmt.Sprintf(`{"name":"static","plugin":"static-verify","mode":"enforce","verdict":%q,"reason":%q,"findings":[]}`, verdict, reason)
	decision := fmt.Sprintf(`{"catalog_generation":1,"subject_sha256":"%064x","session":"sess-%d","findings":[{"code":"no_network","severity":"high","message":"<curl> & co","evidence":{"url":"https://secret.example"},"stage":"static"}]}`, f.runs, f.runs)
	return []eventlog.Record{
		{Kind: eventlog.KindStage, RunID: id, Pipeline: "plan", Stage: "static", Plugin: "static-verify",
			Verdict: verdict, Reason: reason, Data: json.RawMessage(stage)},
		{Kind: eventlog.KindDecision, RunID: id, Pipeline: "plan", Verdict: verdict, RequestID: "req-" + id,
			Data: json.RawMessage(decision)}}
}

// options are an Exporter's options over the fixture, quick to flush.
func (f *fixture) options(sink Sink) Options {
	return Options{Sink: sink, LogPath: f.logPath, CursorPath: f.cursorPath, FlushInterval: 20 * time.Millisecond,
		MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, Timeout: 5 * time.Second,
		Labels: map[string]string{"id": "node-1", "version": "v-test"}, Logger: discard()}
}

func newExporter(t *testing.T, o Options) *Exporter {
	t.Helper()
	e, err := New(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close(t.Context()) })
	return e
}

// opaEvent is what the receiver decodes: the OPA shape plus gatehost's.
type opaEvent struct {
	Labels     map[string]string `json:"labels"`
	DecisionID string            `json:"decision_id"`
	Path       string            `json:"path"`
	Input      map[string]any    `json:"input"`
	Result     struct {
		Verdict  string           `json:"verdict"`
		Reason   string           `json:"reason"`
		Findings []map[string]any `json:"findings"`
	} `json:"result"`
	Timestamp string   `json:"timestamp"`
	RequestID string   `json:"request_id"`
	Erased    []string `json:"erased"`
	Seq       uint64   `json:"seq"`
	Hash      string   `json:"hash"`
	Prev      string   `json:"prev"`
	Chain     string   `json:"chain"`
}

// receiver is an OPA decision-log service: it decodes each POST as a gzip
// JSON array and keeps the events of those it acknowledges. before, if
// set, decides the answer of each request (0 means accept) after the body
// was decoded.
type receiver struct {
	t      *testing.T
	mu     sync.Mutex
	events []opaEvent
	posts  int
	before func(r *http.Request, n int, batch []opaEvent) int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	assert.Equal(rc.t, http.MethodPost, r.Method)
	assert.Equal(rc.t, "gzip", r.Header.Get("Content-Encoding"))
	assert.Equal(rc.t, "application/json", r.Header.Get("Content-Type"))
	zr, err := gzip.NewReader(r.Body)
	if !assert.NoError(rc.t, err) {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	b, err := io.ReadAll(zr)
	require.NoError(rc.t, err)
	var batch []opaEvent
	if !assert.NoError(rc.t, json.Unmarshal(b, &batch), "%s", b) {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.posts++
	n := rc.posts
	before := rc.before
	rc.mu.Unlock()
	if before != nil {
		if code := before(r, n, batch); code != 0 {
			w.WriteHeader(code)
			return
		}
	}
	rc.mu.Lock()
	rc.events = append(rc.events, batch...)
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) got() []opaEvent {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.events)
}

func newReceiver(t *testing.T) (*receiver, *httptest.Server) {
	rc := &receiver{t: t}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv
}

func httpSink(t *testing.T, url string) *HTTPSink {
	t.Helper()
	s, err := NewHTTPSink(url, map[string]string{"Authorization": "Bearer t0ken"}, nil)
	require.NoError(t, err)
	return s
}

// decisionSeqs are the seqs of the decision records of the log, in order.
func decisionSeqs(t *testing.T, path string) []uint64 {
	t.Helper()
	var seqs []uint64
	require.NoError(t, eventlog.ReadFrom(path, 0, func(r eventlog.Record) error {
		if r.Kind == eventlog.KindDecision {
			seqs = append(seqs, r.Seq)
		}
		return nil
	}))
	return seqs
}

// firstSeen returns the seqs of events in the order they first arrived:
// with at-least-once delivery a seq may arrive again, never out of order.
func firstSeen(events []opaEvent) []uint64 {
	seen := map[uint64]bool{}
	var out []uint64
	for _, ev := range events {
		if !seen[ev.Seq] {
			seen[ev.Seq] = true
			out = append(out, ev.Seq)
		}
	}
	return out
}

// waitFor polls cond until it holds; the deadline only guards a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, deadline, 2*time.Millisecond, "waiting for %s", what)
}

// waitAll waits until the receiver holds every decision of the log.
func waitAll(t *testing.T, rc *receiver, f *fixture) []uint64 {
	t.Helper()
	want := decisionSeqs(t, f.logPath)
	waitFor(t, "every decision exported", func() bool { return len(firstSeen(rc.got())) >= len(want) })
	got := firstSeen(rc.got())
	require.Equal(t, want, got, "every decision, in seq order")
	return got
}
