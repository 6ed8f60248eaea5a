package decisionlog

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/eventlog"
)

func TestExportOPAShape(t *testing.T) {
	f := newFixture(t)
	rc, srv := newReceiver(t)
	var auth atomic.Value
	rc.before = func(r *http.Request, _ int, _ []opaEvent) int {
		auth.Store(r.Header.Get("Authorization"))
		return 0
	}
	e := newExporter(t, f.options(httpSink(t, srv.URL+"/logs")))
	app := Tee(f.log, e)
	var decisions []eventlog.Record
	for range 3 {
		recs := f.run(t, app)
		decisions = append(decisions, recs[len(recs)-1])
	}
	waitAll(t, rc, f)
	assert.Equal(t, "Bearer t0ken", auth.Load())
	for i, ev := range rc.got()[:3] {
		d := decisions[i]
		assert.Equal(t, map[string]string{"id": "node-1", "version": "v-test"}, ev.Labels)
		assert.Equal(t, d.RunID, ev.DecisionID)
		assert.Equal(t, "gatehost/plan", ev.Path)
		assert.Equal(t, d.Verdict, ev.Result.Verdict)
		require.Len(t, ev.Result.Findings, 1)
		assert.Equal(t, "no_network", ev.Result.Findings[0]["code"])
		assert.Equal(t, "<curl> & co", ev.Result.Findings[0]["message"])
		assert.NotContains(t, ev.Input, "findings", "findings are the result's")
		assert.Equal(t, "sess-"+d.RunID[len("run-000"):], ev.Input["session"])
		ts, err := time.Parse(time.RFC3339Nano, ev.Timestamp)
		require.NoError(t, err)
		assert.True(t, ts.Equal(d.Time))
		assert.Equal(t, d.RequestID, ev.RequestID)
		assert.Equal(t, d.Seq, ev.Seq)
		assert.Equal(t, d.Hash, ev.Hash)
		assert.Equal(t, d.Prev, ev.Prev)
		assert.Equal(t, "node-1", ev.Chain)
		assert.Empty(t, ev.Erased)
	}
	// The third run is inconclusive: its reason is its enforcing stage's.
	assert.Equal(t, "plugin_timeout", rc.got()[2].Result.Reason)
	assert.Empty(t, rc.got()[0].Result.Reason)
	waitFor(t, "the cursor at the last decision", func() bool { return e.Stats().Cursor.Seq == decisions[2].Seq })
	c, err := ReadCursor(f.cursorPath)
	require.NoError(t, err)
	assert.Equal(t, Cursor{Seq: decisions[2].Seq, Hash: decisions[2].Hash}, c)
	assert.Equal(t, uint64(3), e.Stats().Exported)
}

// An exported record's hash, kept by the receiver, anchors the local log:
// `gatehost log verify --anchor HASH` (eventlog.Verify) finds it on the
// chain, and catches a log rewritten since.
func TestExportedHashAnchorsTheLocalLog(t *testing.T) {
	f := newFixture(t)
	rc, srv := newReceiver(t)
	e := newExporter(t, f.options(httpSink(t, srv.URL)))
	app := Tee(f.log, e)
	for range 4 {
		f.run(t, app)
	}
	waitAll(t, rc, f)
	for _, ev := range rc.got() {
		rep, err := eventlog.Verify(f.logPath, eventlog.VerifyOptions{Anchor: ev.Hash})
		require.NoError(t, err, "--anchor %s", ev.Hash)
		assert.Equal(t, ev.Seq, rep.AnchorSeq)
	}
	require.NoError(t, e.Close(t.Context()))
	require.NoError(t, f.log.Close())

	// Rewrite the log consistently from the first record on, as an
	// attacker with write access could: the chain verifies, the anchor
	// does not.
	var recs []eventlog.Record
	require.NoError(t, eventlog.ReadFrom(f.logPath, 0, func(r eventlog.Record) error {
		recs = append(recs, r)
		return nil
	}))
	require.NoError(t, os.Remove(f.logPath))
	require.NoError(t, os.Remove(f.logPath+".head"))
	forged, err := eventlog.Open(f.logPath, eventlog.Options{NoSync: true, Logger: discard()})
	require.NoError(t, err)
	recs[1].Verdict = "accepted"
	_, err = forged.Append(recs...)
	require.NoError(t, err)
	require.NoError(t, forged.Close())
	_, err = eventlog.Verify(f.logPath)
	require.NoError(t, err)
	_, err = eventlog.Verify(f.logPath, eventlog.VerifyOptions{Anchor: rc.got()[0].Hash})
	var ce *eventlog.ChainError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, eventlog.ReasonAnchorNotFound, ce.Reason)
}

func TestExportRetriesServerErrors(t *testing.T) {
	f := newFixture(t)
	rc, srv := newReceiver(t)
	var failing atomic.Int32
	failing.Store(4)
	rc.before = func(_ *http.Request, _ int, _ []opaEvent) int {
		if failing.Add(-1) >= 0 {
			return http.StatusInternalServerError
		}
		return 0
	}
	o := f.options(httpSink(t, srv.URL))
	o.MaxBatchEvents = 2
	e := newExporter(t, o)
	app := Tee(f.log, e)
	for range 7 {
		f.run(t, app)
	}
	waitAll(t, rc, f)
	assert.GreaterOrEqual(t, e.Stats().Failures, uint64(4))
	assert.Len(t, rc.got(), 7, "a refused batch was not kept, so nothing arrived twice")
}

func TestExportTooManyRequestsAndNetworkErrors(t *testing.T) {
	f := newFixture(t)
	rc := &receiver{t: t}
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			// Cut the connection: a network error to the client.
			conn, _, err := http.NewResponseController(w).Hijack()
			require.NoError(t, err)
			conn.Close()
		default:
			rc.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	e := newExporter(t, f.options(httpSink(t, srv.URL)))
	app := Tee(f.log, e)
	for range 3 {
		f.run(t, app)
	}
	waitAll(t, rc, f)
	assert.GreaterOrEqual(t, e.Stats().Failures, uint64(2))
}

// A receiver slower than the attempt timeout: each attempt is cut off and
// retried. The slow receiver kept what it was sent, so events may arrive
// twice (at-least-once), never out of order, none missing.
func TestExportSlowReceiver(t *testing.T) {
	f := newFixture(t)
	rc, srv := newReceiver(t)
	var slow atomic.Int32
	slow.Store(2)
	rc.before = func(r *http.Request, _ int, batch []opaEvent) int {
		if slow.Add(-1) >= 0 {
			rc.mu.Lock()
			rc.events = append(rc.events, batch...) // processed, answered too late
			rc.mu.Unlock()
			<-r.Context().Done() // past the client's attempt timeout
			return http.StatusServiceUnavailable
		}
		return 0
	}
	o := f.options(httpSink(t, srv.URL))
	o.Timeout = 50 * time.Millisecond
	e := newExporter(t, o)
	app := Tee(f.log, e)
	for range 4 {
		f.run(t, app)
	}
	waitFor(t, "every decision acknowledged", func() bool { return e.Stats().Exported >= 4 })
	waitAll(t, rc, f)
	assert.GreaterOrEqual(t, e.Stats().Failures, uint64(2))
	assert.Greater(t, len(rc.got()), 4, "the batches cut off were sent again")
}

// The receiver goes away (connection refused) and comes back on the same
// address: nothing is lost, order is kept.
func TestExportReceiverRestart(t *testing.T) {
	f := newFixture(t)
	rc := &receiver{t: t}
	srv := httptest.NewServer(rc)
	addr := srv.Listener.Addr().String()
	e := newExporter(t, f.options(httpSink(t, "http://"+addr)))
	app := Tee(f.log, e)
	f.run(t, app)
	waitAll(t, rc, f)

	srv.Close()
	for range 5 {
		f.run(t, app)
	}
	waitFor(t, "failed attempts while the receiver is down", func() bool { return e.Stats().Failures >= 2 })

	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv2 := &httptest.Server{Listener: ln, Config: &http.Server{Handler: rc}}
	srv2.Start()
	t.Cleanup(srv2.Close)
	for range 2 {
		f.run(t, app)
	}
	waitAll(t, rc, f)
}

// A full buffer drops records (counted); they are read back from the
// local log through the cursor and exported in order.
func TestExportBufferOverflowHealsFromTheLog(t *testing.T) {
	f := newFixture(t)
	rc, srv := newReceiver(t)
	release := make(chan struct{})
	rc.before = func(_ *http.Request, n int, _ []opaEvent) int {
		if n == 1 {
			<-release // hold the sender while the buffer overflows
		}
		return 0
	}
	o := f.options(httpSink(t, srv.URL))
	o.BufferRecords = 4
	o.MaxBatchEvents = 1
	e := newExporter(t, o)
	app := Tee(f.log, e)
	f.run(t, app)
	waitFor(t, "the first post", func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return rc.posts == 1
	})
	for range 30 {
		f.run(t, app) // never blocks, whatever the buffer
	}
	st := e.Stats()
	assert.Positive(t, st.Dropped[DropBufferFull])
	assert.LessOrEqual(t, st.Buffered, 4)
	close(release)
	waitAll(t, rc, f)
	assert.Positive(t, e.Stats().Healed)
	assert.Len(t, rc.got(), 31, "healed, not duplicated")
}

// A new exporter on the same cursor resumes after the last acknowledged
// record, with what was appended while none ran.
func TestExporterRestartResumesFromTheCursor(t *testing.T) {
	f := newFixture(t)
	rc, srv := newReceiver(t)
	e := newExporter(t, f.options(httpSink(t, srv.URL)))
	for range 3 {
		f.run(t, Tee(f.log, e))
	}
	waitAll(t, rc, f)
	waitFor(t, "the cursor", func() bool { return e.Stats().Cursor.Seq == 6 })
	require.NoError(t, e.Close(t.Context()))
	f.run(t, Tee(f.log, e)) // after Close: counted, left to the cursor
	assert.Equal(t, uint64(2), e.Stats().Dropped[DropStopped])
	for range 3 {
		f.run(t, f.log) // no exporter running
	}

	e2 := newExporter(t, f.options(httpSink(t, srv.URL)))
	f.run(t, Tee(f.log, e2))
	got := waitAll(t, rc, f)
	assert.Len(t, got, 8)
	assert.Len(t, rc.got(), 8, "nothing before the cursor again")
	waitFor(t, "the acknowledgement", func() bool { return e2.Stats().Exported == 5 })
}

func TestExporterRefusesACursorOffTheLog(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cursor Cursor
	}{
		{"another hash", Cursor{Seq: 2, Hash: strings.Repeat("a", 64)}},
		{"past the end", Cursor{Seq: 99, Hash: strings.Repeat("a", 64)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for range 2 {
				f.run(t, f.log)
			}
			require.NoError(t, writeCursor(f.cursorPath, tc.cursor))
			rc, srv := newReceiver(t)
			e := newExporter(t, f.options(httpSink(t, srv.URL)))
			waitFor(t, "the exporter to stop", func() bool { return e.Err() != nil })
			require.ErrorIs(t, e.Err(), ErrCursorMismatch)
			f.run(t, Tee(f.log, e)) // the decision is recorded all the same
			assert.Positive(t, e.Stats().Dropped[DropStopped])
			assert.Empty(t, rc.got())
		})
	}
}

func TestExporterRefusesABadCursorFile(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, os.WriteFile(f.cursorPath, []byte(`{"seq":"x"}`), 0o600))
	_, err := New(f.options(httpSink(t, "http://127.0.0.1:1")))
	require.ErrorIs(t, err, ErrBadCursor)
}

// A receiver that refuses one event for good: the batch is split until
// that event is alone, it is dropped (counted) and everything else arrives.
func TestExportRejectedEventIsDroppedAlone(t *testing.T) {
	f := newFixture(t)
	rc, srv := newReceiver(t)
	var bad atomic.Uint64
	rc.before = func(_ *http.Request, _ int, batch []opaEvent) int {
		for _, ev := range batch {
			if ev.Seq == bad.Load() {
				return http.StatusRequestEntityTooLarge
			}
		}
		return 0
	}
	release := make(chan struct{})
	gate := &gatedSink{Sink: httpSink(t, srv.URL), release: release}
	o := f.options(gate)
	o.MaxBatchEvents = 8
	o.FlushInterval = time.Hour // batches go out full
	e := newExporter(t, o)
	app := Tee(f.log, e)
	var decisions []uint64
	for range 8 {
		recs := f.run(t, app)
		decisions = append(decisions, recs[1].Seq)
	}
	bad.Store(decisions[5])
	close(release)
	want := append(append([]uint64{}, decisions[:5]...), decisions[6:]...)
	waitFor(t, "the others", func() bool { return len(rc.got()) == 7 })
	assert.Equal(t, want, firstSeen(rc.got()))
	waitFor(t, "the cursor past the rejected event", func() bool { return e.Stats().Cursor.Seq == decisions[7] })
	assert.Equal(t, uint64(1), e.Stats().Dropped[DropRejected])
}

// gatedSink holds every Send until release is closed.
type gatedSink struct {
	Sink
	release chan struct{}
}

func (g *gatedSink) Send(ctx context.Context, evs []Event) error {
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Sink.Send(ctx, evs)
}

func TestExportMasks(t *testing.T) {
	f := newFixture(t)
	rc, srv := newReceiver(t)
	o := f.options(httpSink(t, srv.URL))
	o.Mask = []string{"/result/findings/0/evidence", "/input/session", "/input/absent", "/result/findings/7"}
	e := newExporter(t, o)
	f.run(t, Tee(f.log, e))
	waitAll(t, rc, f)
	ev := rc.got()[0]
	assert.Equal(t, Masked, ev.Result.Findings[0]["evidence"])
	assert.Equal(t, Masked, ev.Input["session"])
	assert.Equal(t, "no_network", ev.Result.Findings[0]["code"], "the rest is kept")
	assert.Equal(t, []string{"/result/findings/0/evidence", "/input/session"}, ev.Erased, "only the pointers that matched")
	// The local log keeps the value; the exported hash still anchors it.
	var data string
	require.NoError(t, eventlog.ReadFrom(f.logPath, ev.Seq-1, func(r eventlog.Record) error {
		if r.Seq == ev.Seq {
			data = string(r.Data)
		}
		return nil
	}))
	assert.Contains(t, data, "secret.example")
	_, err := eventlog.Verify(f.logPath, eventlog.VerifyOptions{Anchor: ev.Hash})
	require.NoError(t, err)
}

func TestTeeOffersOnlyWhatWasAppended(t *testing.T) {
	f := newFixture(t)
	rc, srv := newReceiver(t)
	e := newExporter(t, f.options(httpSink(t, srv.URL)))
	app := Tee(f.log, e)
	_, err := app.Append(eventlog.Record{Kind: ""}) // invalid: nothing appended
	require.ErrorIs(t, err, eventlog.ErrInvalidRecord)
	f.run(t, app)
	waitAll(t, rc, f)
	seq, hash := app.Last()
	wantSeq, wantHash := f.log.Last()
	assert.Equal(t, wantSeq, seq)
	assert.Equal(t, wantHash, hash)
}

// Without a local log a gap cannot be healed: it is skipped and counted.
func TestExportWithoutALogCountsWhatIsMissing(t *testing.T) {
	f := newFixture(t)
	rc, srv := newReceiver(t)
	o := f.options(httpSink(t, srv.URL))
	o.LogPath, o.CursorPath = "", ""
	e := newExporter(t, o)
	f.run(t, Tee(f.log, e))
	f.run(t, f.log) // appended past the exporter: seqs 3 and 4 never offered
	recs := f.run(t, Tee(f.log, e))
	waitFor(t, "the gap skipped", func() bool { return len(rc.got()) == 2 })
	assert.Equal(t, []uint64{2, recs[1].Seq}, firstSeen(rc.got()))
	assert.Equal(t, uint64(2), e.Stats().Dropped[DropNoLog])
}

// Close gives up on a receiver that stays down once its context is done;
// the cursor stays at the last acknowledged record.
func TestCloseAbandonsAtItsDeadline(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	e := newExporter(t, f.options(httpSink(t, srv.URL)))
	f.run(t, Tee(f.log, e))
	waitFor(t, "a failed attempt", func() bool { return e.Stats().Failures > 0 })
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, e.Close(ctx))
	assert.Equal(t, uint64(0), e.Stats().Cursor.Seq)
	c, err := ReadCursor(f.cursorPath)
	require.NoError(t, err)
	assert.Equal(t, Cursor{}, c)
	assert.NoError(t, e.Err())
}

func TestNewValidates(t *testing.T) {
	f := newFixture(t)
	sink := httpSink(t, "http://127.0.0.1:1")
	for name, o := range map[string]Options{
		"no sink":          {LogPath: f.logPath, CursorPath: f.cursorPath},
		"log, no cursor":   {Sink: sink, LogPath: f.logPath},
		"cursor, no log":   {Sink: sink, CursorPath: f.cursorPath},
		"negative timeout": {Sink: sink, Timeout: -1},
		"backoffs crossed": {Sink: sink, MinBackoff: time.Minute, MaxBackoff: time.Second},
		"bad mask":         {Sink: sink, Mask: []string{"/hash"}},
	} {
		_, err := New(o)
		require.Error(t, err, name)
	}
	for _, u := range []string{"ftp://x", "http://", "::"} {
		_, err := NewHTTPSink(u, nil, nil)
		require.Error(t, err, u)
	}
}

func TestStatusErrorClasses(t *testing.T) {
	for code, rejected := range map[int]bool{400: true, 413: true, 422: true, 401: false, 403: false, 404: false,
		408: false, 429: false, 500: false, 503: false, 302: false} {
		err := error(&StatusError{Code: code})
		assert.Equal(t, rejected, errors.Is(err, ErrRejected), "%d", code)
	}
	e := &Exporter{opts: Options{MinBackoff: time.Millisecond, MaxBackoff: time.Second}}
	for attempt := range 40 {
		d := e.backoff(attempt, errors.New("x"))
		assert.LessOrEqual(t, d, time.Second)
		assert.Positive(t, d)
	}
	d := e.backoff(0, &StatusError{Code: 429, RetryAfter: time.Hour})
	assert.Equal(t, time.Second, d, "Retry-After is capped at MaxBackoff")
}

// Tail mode: records appended without Tee are read from the log.
func TestExportTailsTheLog(t *testing.T) {
	f := newFixture(t)
	rc, srv := newReceiver(t)
	o := f.options(httpSink(t, srv.URL))
	o.PollInterval = 10 * time.Millisecond
	newExporter(t, o)
	for range 3 {
		f.run(t, f.log)
	}
	waitAll(t, rc, f)
	assert.Len(t, rc.got(), 3)
}
