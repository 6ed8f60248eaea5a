package decisionlog

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehost/gatehost/host/eventlog"
)

// Defaults of Options' zero fields.
const (
	DefaultMaxBatchBytes  = 512 << 10
	DefaultMaxBatchEvents = 500
	DefaultFlushInterval  = time.Second
	DefaultBufferRecords  = 10_000
	DefaultTimeout        = 10 * time.Second
	DefaultMinBackoff     = 100 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
)

// Reasons a record was not exported when it was offered, for
// Stats.Dropped and the metric's reason label.
const (
	// DropBufferFull: Offer found the buffer full. Not lost: the record
	// is read back from the local log (Options.LogPath) and exported in
	// its turn.
	DropBufferFull = "buffer_full"
	// DropRejected: the receiver refused the event for good (HTTP 400,
	// 413 or 422, alone in its batch). Lost to this export; it stays in
	// the local log, and the Exporter logs its seq and hash.
	DropRejected = "rejected"
	// DropNoLog: records missing from the buffer with no local log to
	// read them back from (Options.LogPath unset). Lost to this export.
	DropNoLog = "no_log"
	// DropStopped: offered after Close or after the Exporter stopped on
	// an error (Err). Exported after the next start, from the cursor.
	DropStopped = "stopped"
)

var dropReasons = [...]string{DropBufferFull, DropRejected, DropNoLog, DropStopped}

// ErrCursorMismatch is the Exporter's Err when its cursor names no record
// of the local log: the log was replaced or rewritten since. Nothing is
// exported then; remove the cursor file to export the log from its start.
var ErrCursorMismatch = errors.New("decisionlog: the cursor names no record of the local log")

// warnEvery is the least time between two warnings of one kind.
const warnEvery = 10 * time.Second

// Options configure an Exporter. Sink is required, and so is CursorPath
// with LogPath; every other zero field takes its default.
type Options struct {
	// Sink receives the events.
	Sink Sink
	// LogPath is the local event log file the records come from. It is
	// the source of truth: records missing from the buffer (dropped,
	// offered before a restart, appended without Tee) are read back from
	// it, from the cursor on. "" means no such healing (DropNoLog).
	LogPath string
	// CursorPath is where the last acknowledged seq and hash are kept
	// (written atomically and fsynced after each acknowledged batch).
	// Required with LogPath.
	CursorPath string
	// MaxBatchBytes caps a batch's JSON array, uncompressed (the gzip
	// body is smaller, but for gzip's framing); an event larger than it
	// is sent alone. Default DefaultMaxBatchBytes.
	MaxBatchBytes int
	// MaxBatchEvents caps a batch's events. Default DefaultMaxBatchEvents.
	MaxBatchEvents int
	// FlushInterval is the longest a decision waits for its batch to
	// fill. Default DefaultFlushInterval.
	FlushInterval time.Duration
	// BufferRecords caps the records (all kinds: a decision's stages
	// come with it) waiting between Offer and the sender. Default
	// DefaultBufferRecords.
	BufferRecords int
	// Timeout bounds each attempt to send a batch. Default DefaultTimeout.
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the exponential, jittered wait
	// between attempts. Defaults DefaultMinBackoff, DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// Mask lists RFC 6901 JSON Pointers into the event (ParsePointer)
	// whose values are replaced with Masked.
	Mask []string
	// Labels are every event's labels; "id" defaults to the host name
	// and "version" to the main module's version.
	Labels map[string]string
	// Chain names the chain in every event's "chain"; default the "id"
	// label.
	Chain string
	// PollInterval, if set, reads the log for new records that often
	// even without a gap: for records appended without Tee.
	PollInterval time.Duration
	// Name names the exporter in logs (such as "http", "otlp").
	Name string
	// Logger receives warnings (rate-limited) and errors; default
	// slog.Default().
	Logger *slog.Logger
}

// Stats is a snapshot of an Exporter's counters.
type Stats struct {
	// Exported counts events the receiver acknowledged, duplicates
	// included (see the package doc).
	Exported uint64
	// Dropped counts records not exported when offered, by reason (the
	// Drop* constants); every reason is present.
	Dropped map[string]uint64
	// Failures counts failed attempts to send a batch.
	Failures uint64
	// Healed counts records read back from the local log.
	Healed uint64
	// Buffered is the records waiting in the buffer now.
	Buffered int
	// Cursor is the last acknowledged record.
	Cursor Cursor
}

// Exporter ships decision records to a Sink in seq order, at least once.
// Offer never blocks; one goroutine batches, sends, retries and heals gaps
// from the local log. See the package doc.
type Exporter struct {
	opts   Options
	logger *slog.Logger
	in     chan eventlog.Record
	gap    atomic.Bool // set by Offer when it dropped a record
	closed atomic.Bool
	quit   chan struct{}
	done   chan struct{}
	runCtx context.Context
	cancel context.CancelFunc

	exported, failures, healed atomic.Uint64
	drops                      [len(dropReasons)]atomic.Uint64
	lastDropWarn               atomic.Int64
	cursor                     atomic.Pointer[Cursor]
	err                        atomic.Pointer[error]
	closeOnce                  sync.Once
	closeErr                   error

	// The sender's state, touched by its goroutine only.
	enc       encoder
	next      uint64 // seq of the next record to consume; 0: adopt the first
	acked     Cursor
	validated bool // the cursor was found on the log
	needHeal  bool
	stopped   bool // a send was abandoned: nothing after it may be acked
	pos       eventlog.Position
	held      recordHeap // consumed out of order, waiting for next
	heldSince time.Time
	batch     []Event
	batchSize int    // bytes of batch's JSON array
	through   Cursor // the last record after which no run is in progress
	lastFail  time.Time
}

// New validates opts, reads the cursor and starts exporting: first from
// the local log after the cursor, then what is offered. Close stops it.
func New(opts Options) (*Exporter, error) {
	if opts.Sink == nil {
		return nil, errors.New("decisionlog: Options.Sink is required")
	}
	if (opts.LogPath == "") != (opts.CursorPath == "") {
		return nil, errors.New("decisionlog: Options.LogPath and Options.CursorPath go together")
	}
	for _, c := range []struct {
		name string
		v    int64
	}{{"MaxBatchBytes", int64(opts.MaxBatchBytes)}, {"MaxBatchEvents", int64(opts.MaxBatchEvents)},
		{"FlushInterval", int64(opts.FlushInterval)}, {"BufferRecords", int64(opts.BufferRecords)},
		{"Timeout", int64(opts.Timeout)}, {"MinBackoff", int64(opts.MinBackoff)},
		{"MaxBackoff", int64(opts.MaxBackoff)}, {"PollInterval", int64(opts.PollInterval)}} {
		if c.v < 0 {
			return nil, fmt.Errorf("decisionlog: Options.%s is negative", c.name)
		}
	}
	opts.MaxBatchBytes = cmp.Or(opts.MaxBatchBytes, DefaultMaxBatchBytes)
	opts.MaxBatchEvents = cmp.Or(opts.MaxBatchEvents, DefaultMaxBatchEvents)
	opts.FlushInterval = cmp.Or(opts.FlushInterval, DefaultFlushInterval)
	opts.BufferRecords = cmp.Or(opts.BufferRecords, DefaultBufferRecords)
	opts.Timeout = cmp.Or(opts.Timeout, DefaultTimeout)
	opts.MinBackoff = cmp.Or(opts.MinBackoff, DefaultMinBackoff)
	opts.MaxBackoff = cmp.Or(opts.MaxBackoff, DefaultMaxBackoff)
	if opts.MinBackoff > opts.MaxBackoff {
		return nil, fmt.Errorf("decisionlog: MinBackoff %s above MaxBackoff %s", opts.MinBackoff, opts.MaxBackoff)
	}
	masks := make([]Pointer, len(opts.Mask))
	for i, m := range opts.Mask {
		p, err := ParsePointer(m)
		if err != nil {
			return nil, err
		}
		masks[i] = p
	}
	labels := map[string]string{}
	for k, v := range opts.Labels {
		labels[k] = v
	}
	if labels["id"] == "" {
		labels["id"], _ = os.Hostname()
	}
	if labels["version"] == "" {
		labels["version"] = moduleVersion()
	}
	var cur Cursor
	if opts.CursorPath != "" {
		var err error
		if cur, err = ReadCursor(opts.CursorPath); err != nil {
			return nil, err
		}
	}
	logger := cmp.Or(opts.Logger, slog.Default())
	if opts.Name != "" {
		logger = logger.With("sink", opts.Name)
	}
	e := &Exporter{
		opts: opts, logger: logger, in: make(chan eventlog.Record, opts.BufferRecords),
		quit: make(chan struct{}), done: make(chan struct{}),
		enc:   encoder{labels: labels, chain: cmp.Or(opts.Chain, labels["id"]), masks: masks},
		acked: cur, through: cur, needHeal: opts.LogPath != "",
	}
	if opts.LogPath != "" {
		e.next = cur.Seq + 1
	}
	e.cursor.Store(&cur)
	e.runCtx, e.cancel = context.WithCancel(context.Background())
	go e.run()
	return e, nil
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// Offer queues records for export and returns at once: it never blocks
// and never fails. Call it with the records Append returned (Tee does).
// Records the buffer has no room for are counted (DropBufferFull) and read
// back from the local log later. Offer keeps a reference to decision
// records' Data: do not modify it afterwards. Safe for concurrent use.
func (e *Exporter) Offer(recs ...eventlog.Record) {
	if e.closed.Load() || e.err.Load() != nil {
		e.drop(DropStopped, len(recs))
		return
	}
	for i := range recs {
		r := recs[i]
		// Only a decision's data is exported; of a stage's, only an
		// inconclusive one's mode is read (encoder.stage).
		if r.Kind != eventlog.KindDecision && (r.Kind != eventlog.KindStage || r.Reason == "") {
			r.Data = nil
		}
		select {
		case e.in <- r:
		default:
			e.gap.Store(true)
			e.drop(DropBufferFull, 1)
		}
	}
}

func (e *Exporter) drop(reason string, n int) {
	if n == 0 {
		return
	}
	for i, r := range dropReasons {
		if r == reason {
			e.drops[i].Add(uint64(n))
		}
	}
	if reason == DropStopped {
		return // expected while shutting down; the cursor covers them
	}
	now, last := time.Now().UnixNano(), e.lastDropWarn.Load()
	if now-last >= int64(warnEvery) && e.lastDropWarn.CompareAndSwap(last, now) {
		st := e.Stats()
		e.logger.Warn("decisionlog: records not exported when offered; the local log keeps them",
			"reason", reason, "dropped_buffer_full", st.Dropped[DropBufferFull], "dropped_no_log", st.Dropped[DropNoLog],
			"heals_from_log", e.opts.LogPath != "")
	}
}

// Stats returns a snapshot of the counters. Safe for concurrent use.
func (e *Exporter) Stats() Stats {
	s := Stats{Exported: e.exported.Load(), Failures: e.failures.Load(), Healed: e.healed.Load(),
		Buffered: len(e.in), Cursor: *e.cursor.Load(), Dropped: make(map[string]uint64, len(dropReasons))}
	for i, r := range dropReasons {
		s.Dropped[r] = e.drops[i].Load()
	}
	return s
}

// Err returns the error that stopped the exporter (ErrCursorMismatch, or
// a *eventlog.ChainError of the local log), or nil.
func (e *Exporter) Err() error {
	if p := e.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Close stops exporting: it sends what is buffered (healing a gap from the
// log) until ctx is done, then abandons the rest, which the next Exporter
// on the same cursor exports. It returns the Sink's Close error; later
// calls return the same.
func (e *Exporter) Close(ctx context.Context) error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		close(e.quit)
		select {
		case <-e.done:
		case <-ctx.Done():
			e.cancel()
			<-e.done
		}
		e.cancel()
		e.closeErr = e.opts.Sink.Close(ctx)
	})
	return e.closeErr
}

func (e *Exporter) fail(err error) {
	e.err.CompareAndSwap(nil, &err)
	e.logger.Error("decisionlog: export stopped; decisions are still recorded in the local log", "err", err)
}

func (e *Exporter) run() {
	defer close(e.done)
	tick := time.NewTicker(e.opts.FlushInterval)
	defer tick.Stop()
	var poll <-chan time.Time
	if e.opts.PollInterval > 0 && e.opts.LogPath != "" {
		t := time.NewTicker(e.opts.PollInterval)
		defer t.Stop()
		poll = t.C
	}
	for e.err.Load() == nil && !e.stopped {
		if e.opts.LogPath != "" && (e.gap.Swap(false) || e.needHeal) {
			e.needHeal = false
			e.heal()
			continue
		}
		select {
		case <-e.quit:
			e.finish()
			return
		case r := <-e.in:
			e.consume(r)
		case <-tick.C:
			e.tick()
		case <-poll:
			e.needHeal = true
		}
	}
}

// finish drains the buffer, heals a gap and flushes, until Close's
// deadline cancels runCtx.
func (e *Exporter) finish() {
	for e.err.Load() == nil && !e.stopped {
		select {
		case r := <-e.in:
			e.consume(r)
			continue
		default:
		}
		break
	}
	if e.opts.LogPath != "" && e.err.Load() == nil && !e.stopped && (e.gap.Swap(false) || e.needHeal || e.held.Len() > 0) {
		e.heal()
	}
	e.flush()
}

var errAbandoned = errors.New("decisionlog: abandoned")

// heal reads the local log after the last consumed record and consumes
// what it holds. The first heal checks that the cursor's record is on the
// log with the cursor's hash.
func (e *Exporter) heal() {
	after := e.next - 1
	check := !e.validated && e.acked.Seq > 0
	if check {
		after--
	}
	pos, err := eventlog.ReadAfter(e.opts.LogPath, e.pos, after, func(r eventlog.Record) error {
		if check {
			check = false
			if r.Seq != e.acked.Seq || r.Hash != e.acked.Hash {
				return fmt.Errorf("%w: cursor seq %d hash %s, log seq %d hash %s",
					ErrCursorMismatch, e.acked.Seq, e.acked.Hash, r.Seq, r.Hash)
			}
			return nil
		}
		e.healed.Add(1)
		e.consume(r)
		if e.stopped || e.runCtx.Err() != nil {
			return errAbandoned
		}
		return nil
	})
	e.pos = pos
	switch {
	case errors.Is(err, errAbandoned):
		return
	case err != nil:
		e.fail(fmt.Errorf("decisionlog: reading the local log: %w", err))
		return
	case check:
		e.fail(fmt.Errorf("%w: cursor seq %d is past the end of the log (seq %d)", ErrCursorMismatch, e.acked.Seq, pos.Seq))
		return
	}
	e.validated = true
	for e.held.Len() > 0 && e.held[0].Seq < e.next {
		heap.Pop(&e.held)
	}
	if e.held.Len() == 0 {
		e.heldSince = time.Time{}
	}
}

// consume takes the next record in seq order; one out of order waits in
// held, and one already consumed is skipped.
func (e *Exporter) consume(r eventlog.Record) {
	if e.next == 0 {
		e.next = r.Seq // no log: start with the first offered
	}
	switch {
	case r.Seq < e.next:
		return
	case r.Seq > e.next:
		heap.Push(&e.held, r)
		if e.heldSince.IsZero() {
			e.heldSince = time.Now()
		}
		if e.held.Len() >= e.opts.BufferRecords {
			e.gapFound()
		}
		return
	}
	e.process(&r)
	for e.held.Len() > 0 && e.held[0].Seq <= e.next && !e.stopped {
		h := heap.Pop(&e.held).(eventlog.Record)
		if h.Seq == e.next {
			e.process(&h)
		}
	}
	if e.held.Len() == 0 {
		e.heldSince = time.Time{}
	}
}

// gapFound handles records that are missing from the buffer: heal from
// the log, or without one skip them, counted.
func (e *Exporter) gapFound() {
	if e.opts.LogPath != "" {
		e.needHeal = true
		return
	}
	lost := e.held[0].Seq - e.next
	e.drop(DropNoLog, int(lost))
	e.logger.Warn("decisionlog: records missing from the buffer and no local log to read them from",
		"from_seq", e.next, "records", lost)
	e.next = e.held[0].Seq
	e.consume(heap.Pop(&e.held).(eventlog.Record))
}

func (e *Exporter) tick() {
	e.flush()
	if e.held.Len() > 0 && time.Since(e.heldSince) >= e.opts.FlushInterval {
		e.gapFound() // a record never came: appended without Tee, or lost
	}
}

func (e *Exporter) process(r *eventlog.Record) {
	e.next = r.Seq + 1
	switch r.Kind {
	case eventlog.KindStage:
		e.enc.stage(r)
		return
	case eventlog.KindDecision:
		ev, err := e.enc.decision(r)
		if err != nil {
			e.drop(DropRejected, 1)
			e.logger.Error("decisionlog: a decision record cannot be exported", "seq", r.Seq, "hash", r.Hash, "err", err)
		} else {
			e.add(ev)
		}
	default:
		if e.enc.run.id != "" {
			return // within a run: resume before its stages after a restart
		}
	}
	e.through = Cursor{Seq: r.Seq, Hash: r.Hash}
}

// add appends ev to the batch, sending the batch first if ev would take
// it over MaxBatchBytes, and after if it is full.
func (e *Exporter) add(ev Event) {
	if len(e.batch) > 0 && e.batchSize+1+len(ev.JSON) > e.opts.MaxBatchBytes {
		e.flush()
	}
	if len(e.batch) == 0 {
		e.batchSize = 2 // the array's brackets
	} else {
		e.batchSize++ // a comma
	}
	e.batch = append(e.batch, ev)
	e.batchSize += len(ev.JSON)
	if len(e.batch) >= e.opts.MaxBatchEvents {
		e.through = Cursor{Seq: ev.Seq, Hash: ev.Hash}
		e.flush()
	}
}

// flush sends the batch and, once acknowledged, advances the cursor.
func (e *Exporter) flush() {
	if e.stopped {
		return
	}
	if len(e.batch) > 0 {
		// Only events up to the last one batched are acknowledged by
		// this send; a later through waits for the next.
		through := e.through
		if last := e.batch[len(e.batch)-1]; through.Seq < last.Seq {
			through = Cursor{Seq: last.Seq, Hash: last.Hash}
		}
		ok := e.send(e.batch)
		e.batch, e.batchSize = e.batch[:0], 0
		if !ok {
			e.stopped = true
			return
		}
		e.ack(through)
		return
	}
	if e.through.Seq > e.acked.Seq {
		e.ack(e.through)
	}
}

func (e *Exporter) ack(c Cursor) {
	if c.Seq <= e.acked.Seq {
		return
	}
	e.acked = c
	if e.opts.CursorPath != "" {
		if err := writeCursor(e.opts.CursorPath, c); err != nil {
			// Kept in memory; after a restart the older cursor only
			// re-exports.
			e.logger.Error("decisionlog: cannot persist the cursor", "seq", c.Seq, "err", err)
		}
	}
	e.cursor.Store(&c) // after the file: Stats shows what a restart resumes from
}

// send delivers events, retrying until the receiver acknowledges them or
// runCtx ends (false). A batch the receiver rejects is split in halves; a
// single rejected event is dropped, counted.
func (e *Exporter) send(events []Event) bool {
	for attempt := 0; ; attempt++ {
		if e.runCtx.Err() != nil {
			return false
		}
		ctx, cancel := context.WithTimeout(e.runCtx, e.opts.Timeout)
		err := e.opts.Sink.Send(ctx, events)
		cancel()
		switch {
		case err == nil:
			e.exported.Add(uint64(len(events)))
			return true
		case e.runCtx.Err() != nil:
			return false
		case errors.Is(err, ErrRejected) && len(events) > 1:
			h := len(events) / 2
			return e.send(events[:h]) && e.send(events[h:])
		case errors.Is(err, ErrRejected):
			e.drop(DropRejected, 1)
			e.logger.Error("decisionlog: the receiver rejected a decision; it stays in the local log only",
				"seq", events[0].Seq, "hash", events[0].Hash, "run_id", events[0].RunID, "err", err)
			return true
		}
		e.failures.Add(1)
		wait := e.backoff(attempt, err)
		if time.Since(e.lastFail) >= warnEvery {
			e.lastFail = time.Now()
			e.logger.Warn("decisionlog: export failed; retrying", "attempt", attempt+1, "retry_in", wait,
				"first_seq", events[0].Seq, "events", len(events), "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-e.runCtx.Done():
			t.Stop()
			return false
		}
	}
}

// backoff is MinBackoff doubled per attempt up to MaxBackoff, with equal
// jitter (a random half of it), or the receiver's Retry-After when longer
// (capped at MaxBackoff).
func (e *Exporter) backoff(attempt int, err error) time.Duration {
	d := e.opts.MaxBackoff
	if attempt < 32 {
		d = min(e.opts.MinBackoff<<attempt, e.opts.MaxBackoff)
	}
	d = d/2 + rand.N(d/2+1)
	var se *StatusError
	if errors.As(err, &se) && se.RetryAfter > d {
		d = min(se.RetryAfter, e.opts.MaxBackoff)
	}
	return d
}

// recordHeap orders records by seq (container/heap).
type recordHeap []eventlog.Record

func (h recordHeap) Len() int           { return len(h) }
func (h recordHeap) Less(i, j int) bool { return h[i].Seq < h[j].Seq }
func (h recordHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *recordHeap) Push(x any)        { *h = append(*h, x.(eventlog.Record)) }
func (h *recordHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}
