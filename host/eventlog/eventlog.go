package eventlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gatehost/gatehost/internal/filelock"
	"github.com/gatehost/gatehost/internal/safefile"
)

// Options configures Open. The zero value gives the defaults.
type Options struct {
	// NoSync skips every fsync. A crash may then lose acknowledged records;
	// it exists for benchmarks and tests only.
	NoSync bool
	// Logger receives the report of a torn-tail repair. Default slog.Default().
	Logger *slog.Logger
	// LockTimeout is how long Open waits while another process holds the
	// log (one writer at a time); default 10s, negative means fail at once.
	LockTimeout time.Duration
	// OnCommit, if set, is called after each group commit (see Log), from
	// the committing goroutine without the log's lock held: for metrics.
	// It must not call the Log.
	OnCommit func(Commit)
}

// Commit describes one group commit, for Options.OnCommit.
type Commit struct {
	// Records and Bytes are what the commit wrote.
	Records int
	Bytes   int
	// Fsync is the time the log file's fsync took; 0 with NoSync or when
	// the write failed first.
	Fsync time.Duration
	// Err is the failure that broke the log, if any.
	Err error
}

// DefaultLockTimeout is Options.LockTimeout's default.
const DefaultLockTimeout = 10 * time.Second

var (
	// ErrClosed is returned by Append after Close.
	ErrClosed = errors.New("eventlog: log closed")
	// ErrBroken is returned, wrapping the original cause, by every Append
	// after a failed write, fsync or head update (see Log.Append).
	ErrBroken = errors.New("eventlog: log unusable after a failed append; reopen it")
	// ErrLocked is returned by Open when another Log holds the file.
	ErrLocked = errors.New("eventlog: log is locked by another writer")
)

// file is what Log needs of its *os.File; tests substitute failing ones.
type file interface {
	Write([]byte) (int, error)
	Sync() error
	Close() error
}

// Log is an open event log. Its methods are safe for concurrent use.
//
// Concurrent appends are committed in groups: while one goroutine writes,
// fsyncs and checkpoints a batch, others queue their encoded records, and the
// next of them commits all queued records at once. The fsyncs and the head
// update are then paid once per group rather than once per call.
type Log struct {
	path     string
	headPath string
	opts     Options
	logger   *slog.Logger
	repaired int64

	mu   sync.Mutex
	cond sync.Cond // broadcast when a commit finishes
	f    file      // written only by the committing goroutine
	dir  *os.File
	// seq and hash are the chain's tail including queued records;
	// durableSeq and durableHash, the tail that is written, fsynced and
	// checkpointed.
	seq, durableSeq   uint64
	hash, durableHash string
	queue, spare      []byte // encoded lines awaiting commit; a buffer to swap in
	committing        bool
	err               error // sticky: set by the first failed commit
	closed            bool
}

// Open opens the log at path, creating it and its directories if needed.
// It verifies the whole chain and the head file first and refuses, with a
// *ChainError, a log that fails; a torn tail is truncated away (see the
// package doc and Repaired). Only one Log may hold a file at a time. A
// path that is not a regular file (a named pipe, a device, a directory;
// symbolic links are followed) is refused at once, never read.
func Open(path string, opts Options) (*Log, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	dirPath := filepath.Dir(path)
	if err := os.MkdirAll(dirPath, 0o750); err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	f, err := safefile.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	l, err := open(path, f, dirPath, opts, logger)
	if err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

func open(path string, f *os.File, dirPath string, opts Options, logger *slog.Logger) (*Log, error) {
	if err := lockLog(f, opts.LockTimeout); err != nil {
		if errors.Is(err, filelock.ErrLocked) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, fmt.Errorf("eventlog: lock %s: %w", path, err)
	}
	hp := headPath(path)
	head, haveHead, err := readHead(hp)
	if err != nil {
		return nil, withPath(err, path)
	}
	var headHash string
	res, err := scan(f, func(r *Record) error {
		if r.Seq == head.Seq {
			headHash = r.Hash
		}
		return nil
	})
	if err == nil {
		err = checkHead(res, head, haveHead, headHash)
	}
	if err != nil {
		return nil, withPath(err, path)
	}
	dir, err := safefile.OpenDir(dirPath)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	l := &Log{
		path: path, headPath: hp, opts: opts, logger: logger, f: f, dir: dir,
		seq: res.records, hash: res.lastHash, durableSeq: res.records, durableHash: res.lastHash,
	}
	l.cond.L = &l.mu
	fail := func(err error) (*Log, error) {
		dir.Close()
		return nil, fmt.Errorf("eventlog: open %s: %w", path, err)
	}
	if res.torn {
		if err := f.Truncate(res.goodEnd); err != nil {
			return fail(err)
		}
		if err := l.sync(f); err != nil {
			return fail(err)
		}
		l.repaired = res.tornBytes
		logger.Warn("eventlog: truncated torn tail left by an interrupted append",
			"path", path, "bytes_dropped", res.tornBytes, "last_seq", res.records)
	}
	// Persist the log's directory entry if Open just created the file.
	if err := l.syncDir(); err != nil {
		return fail(err)
	}
	if !haveHead || head.Seq != l.seq {
		if haveHead {
			logger.Info("eventlog: head checkpoint behind log, catching up",
				"path", path, "head_seq", head.Seq, "last_seq", l.seq)
		}
		if err := l.writeHead(l.seq, l.hash); err != nil {
			return fail(err)
		}
	}
	if res.torn {
		// The repair is itself on the chain, so a reader of the log sees
		// that bytes were dropped here, and how many.
		data := fmt.Appendf(nil, `{"bytes_dropped":%d,"after_seq":%d}`, res.tornBytes, res.records)
		if _, err := l.Append(Record{Kind: KindRepair, Data: data}); err != nil {
			_ = l.f.Close()
			return fail(err)
		}
	}
	return l, nil
}

// Repaired reports how many bytes of torn tail Open truncated; 0 if none.
// Open records each repair as a KindRepair record, the first it appends.
func (l *Log) Repaired() (bytesDropped int64) { return l.repaired }

// Last returns the seq and hash of the last durable record: the hash the
// next record's prev will hold. For an empty log it returns 0 and GenesisPrev.
// Keeping this hash outside the log's reach makes it an anchor for Verify.
func (l *Log) Last() (seq uint64, hash string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.durableSeq, l.durableHash
}

// Append completes recs (seq, prev, hash and a zero time; times are stored
// in UTC), writes them, fsyncs, updates the head, and returns the completed
// records. The records of one call are contiguous and go out in one write.
// A record that cannot be encoded, or exceeds MaxRecordBytes, fails the call
// before anything is written.
//
// After a failed write, fsync or head update, the Log refuses every further
// append with ErrBroken. Its state on disk is then unknown: a short write may
// have left a partial line that the next record would be glued to, and after
// a failed fsync the kernel may have dropped the dirty pages and cleared the
// error, so a retried fsync can report success for data that is gone. Open
// the log again to re-scan it and repair any torn tail. An error from Append
// therefore means the records may or may not be in the log, as after a crash.
func (l *Log) Append(recs ...Record) ([]Record, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if l.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBroken, l.err)
	}

	// Encode straight onto the queue, chaining from the queued tail; on a
	// bad record seal leaves the queue as it was, so nothing of this call
	// is written.
	queue, out, err := seal(l.queue, l.seq, l.hash, time.Now(), recs, nil)
	if err != nil {
		return nil, err
	}
	l.queue = queue
	seq := out[len(out)-1].Seq
	l.seq, l.hash = seq, out[len(out)-1].Hash

	for l.durableSeq < seq {
		switch {
		case l.err != nil:
			return nil, l.err
		case l.committing:
			l.cond.Wait()
		default:
			l.commit()
		}
	}
	return out, nil
}

// commit writes, fsyncs and checkpoints everything queued. It is called with
// l.mu held and releases it during I/O; l.committing keeps it to one at a time.
func (l *Log) commit() {
	batch, seq, hash := l.queue, l.seq, l.hash
	records := int(seq - l.durableSeq)
	l.queue, l.spare = l.spare[:0], nil
	l.committing = true
	l.mu.Unlock()

	op, err := "write", error(nil)
	var fsync time.Duration
	if _, err = l.f.Write(batch); err == nil {
		start := time.Now()
		op, err = "fsync", l.sync(l.f)
		if !l.opts.NoSync {
			fsync = time.Since(start)
		}
	}
	if err == nil {
		op, err = "head update", l.writeHead(seq, hash)
	}
	if l.opts.OnCommit != nil {
		l.opts.OnCommit(Commit{Records: records, Bytes: len(batch), Fsync: fsync, Err: err})
	}

	l.mu.Lock()
	l.committing = false
	if err != nil {
		l.err = fmt.Errorf("eventlog: %s %s: %w", op, l.path, err)
		l.logger.Error("eventlog: append failed; refusing further appends until reopened",
			"path", l.path, "op", op, "err", err)
	} else {
		l.durableSeq, l.durableHash = seq, hash
	}
	if cap(batch) <= 1<<20 { // keep a modest buffer; let a huge one go
		l.spare = batch[:0]
	}
	l.cond.Broadcast()
}

func (l *Log) sync(f interface{ Sync() error }) error {
	if l.opts.NoSync {
		return nil
	}
	return f.Sync()
}

func (l *Log) syncDir() error {
	if l.opts.NoSync {
		return nil
	}
	return syncDir(l.dir)
}

// writeHead replaces the head file with the current (seq, hash) atomically:
// a crash leaves either the old head or the new one, both valid because the
// log was fsynced first.
func (l *Log) writeHead(seq uint64, hash string) error {
	return writeHeadFile(l.headPath, Head{Seq: seq, Hash: hash}, l.sync, l.syncDir)
}

// WriteHead writes h as the head file of the log at logPath (HeadPath),
// replacing any, atomically and durably: a temporary file, fsynced, renamed
// over the old one, the directory fsynced. It is for a log written by other
// means, such as one exported from another store, so that Verify and Open
// check it against h. It does not check h.
func WriteHead(logPath string, h Head) error {
	dir, err := safefile.OpenDir(filepath.Dir(logPath))
	if err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	defer dir.Close()
	err = writeHeadFile(headPath(logPath), h, func(f interface{ Sync() error }) error { return f.Sync() },
		func() error { return syncDir(dir) })
	if err != nil {
		return fmt.Errorf("eventlog: write head of %s: %w", logPath, err)
	}
	return nil
}

func writeHeadFile(path string, h Head, sync func(interface{ Sync() error }) error, syncDir func() error) error {
	tmp := path + ".tmp"
	f, err := safefile.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	_, err = f.Write(AppendHead(make([]byte, 0, 96), h))
	if err == nil {
		err = sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir()
	}
	return err
}

// Close waits for queued appends to finish, then closes the log and releases
// its lock. Further appends return ErrClosed. Closing twice is harmless.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	for l.committing || (len(l.queue) > 0 && l.err == nil) {
		l.cond.Wait()
	}
	err := l.f.Close()
	if derr := l.dir.Close(); err == nil {
		err = derr
	}
	return err
}

// lockLog takes the log's exclusive lock, waiting up to timeout while
// another process holds it: a short run of concurrent CLI checks then
// queues instead of failing.
func lockLog(f *os.File, timeout time.Duration) error {
	if timeout < 0 {
		return filelock.TryLock(f)
	}
	if timeout == 0 {
		timeout = DefaultLockTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return filelock.LockContext(ctx, f)
}

// Appender is what a writer of decisions needs of an event log. *Log
// implements it over a file; other stores (the PostgreSQL store of a
// fleet) implement it with the same records, canonical encoding and chain.
//
// Append has Log.Append's contract: nil only once the records are durable,
// an error meaning they may or may not be stored. It takes no context on
// purpose: a decision is recorded even when its request was cancelled, so
// an implementation bounds each append by a timeout of its own.
type Appender interface {
	Append(recs ...Record) ([]Record, error)
	// Last returns the seq and hash of the last durable record of the
	// chain this Appender writes (0 and GenesisPrev when empty).
	Last() (seq uint64, hash string)
}

var _ Appender = (*Log)(nil)
