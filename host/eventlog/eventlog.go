package eventlog

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
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
	// LockTimeout is how long Open, and each group commit, waits while
	// another process (or another Log of this one) is appending to the
	// file; default 10s, negative means fail at once. The lock is held
	// only for the length of one commit (see the package doc).
	LockTimeout time.Duration
	// OnCommit, if set, is called after each group commit (see Log), from
	// the committing goroutine with neither the Log's mutex nor the file's
	// lock held: for metrics.
	// It must not call the Log.
	OnCommit func(Commit)
	// HeadInterval is how long the head checkpoint (see the package doc)
	// may trail the records an Append acknowledged. Zero replaces the head
	// in every commit, before Append returns: three fsyncs per commit (the
	// log, the head's temporary file, the directory). A positive interval
	// leaves one: a commit fsyncs its records and returns, and the head is
	// replaced in the background no later than HeadInterval after the
	// first commit it does not cover, and by Close. The records themselves
	// are as durable either way; what trails is only the head's protection
	// against truncation (see "Head checkpoint" in the package doc).
	HeadInterval time.Duration
}

// Commit describes one group commit, for Options.OnCommit.
type Commit struct {
	// Records and Bytes are what the commit wrote.
	Records int
	Bytes   int
	// Fsync is the time the log file's fsync took; 0 with NoSync or when
	// the write failed first.
	Fsync time.Duration
	// Head reports whether the commit replaced the head checkpoint: every
	// commit with Options.HeadInterval zero, only the background
	// checkpoints otherwise (those have Records 0).
	Head bool
	// Err is the failure that broke the log, or the lock wait that failed
	// the commit, if any.
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
	// ErrLocked is returned by Open, and wrapped by Append, when another
	// writer held the file's lock for longer than Options.LockTimeout.
	ErrLocked = errors.New("eventlog: log is locked by another writer")
)

// file is what Log needs of its *os.File; tests substitute failing ones.
type file interface {
	Write([]byte) (int, error)
	ReadAt([]byte, int64) (int, error)
	Stat() (os.FileInfo, error)
	Truncate(int64) error
	Sync() error
	Close() error
	SyscallConn() (syscall.RawConn, error)
}

// Log is an open event log. Its methods are safe for concurrent use, and
// several Logs, in one process or in several, may append to one file.
//
// Concurrent appends are committed in groups: while one goroutine writes,
// fsyncs and checkpoints a batch, others queue their encoded records, and the
// next of them commits all queued records at once. The fsyncs and the head
// update are then paid once per group rather than once per call.
//
// Each commit takes the file's lock (an flock), reads what other writers
// appended since this Log's last commit, if anything, and chains its batch
// after it: records are sealed when queued, chained after the tail this Log
// knows, and sealed again under the lock only if another writer moved the
// tail in between.
type Log struct {
	path     string
	headPath string
	opts     Options
	logger   *slog.Logger

	mu       sync.Mutex
	cond     sync.Cond // broadcast when a commit finishes
	f        file      // written only by the committing goroutine
	dir      *os.File
	repaired int64
	// seq and hash are the provisional tail: the last queued record, or
	// the last on the chain if none is queued. durableSeq and durableHash
	// are the tail as of this Log's last commit (its own records, or
	// others' it read).
	seq, durableSeq   uint64
	hash, durableHash string
	cur               *batch   // the queue: appends awaiting the next commit
	spare             [][]byte // up to two buffers for the queue to reuse
	committing        bool
	err               error // sticky: set by the first failed commit
	closed            bool
	// headSeq is the seq the head file holds as this Log last wrote or
	// read it; headTimer, set while a background checkpoint is due (with
	// Options.HeadInterval only).
	headSeq   uint64
	headTimer *time.Timer

	// Owned by the committing goroutine (or by Open, before the Log is
	// shared): the chain's tail as this Log last saw it under the lock,
	// and the pending wait for the lock that a timed-out commit left.
	tail        tail
	lockPending *lockWait
}

// tail is where a file's chain ends: its last record's seq and hash, and
// the file's size through that record's newline.
type tail struct {
	seq  uint64
	hash string
	size int64
}

// batch is one group commit's records: encoded in buf, chained after
// (seq, hash); outs holds each Append's records, returned to its caller.
type batch struct {
	buf  []byte
	outs [][]Record
	one  [1][]Record // outs' first backing array: most batches hold one call
	seq  uint64
	hash string
	done bool
	err  error
}

// Open opens the log at path, creating it and its directories if needed.
// It verifies the whole chain and the head file first and refuses, with a
// *ChainError, a log that fails; a torn tail is truncated away (see the
// package doc and Repaired). Other Logs, in this process or others, may
// have the same file open and append to it; Open takes the file's lock
// only briefly, after reading the log. A path that is not a regular file (a
// named pipe, a device, a directory; symbolic links are followed) is
// refused at once, never read.
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
	l := &Log{path: path, headPath: headPath(path), opts: opts, logger: logger, f: f}
	l.cond.L = &l.mu
	// Read and verify the log without the lock, as Verify does, so that a
	// long log does not hold other writers up; what they append meanwhile
	// is read under the lock below. Should the head not match, a writer
	// may have been creating the log or moving its head during the read:
	// read again under the lock, where nothing moves, before refusing.
	h1, t, err := readChain(f, l.headPath)
	locked := false
	if err != nil {
		var ce *ChainError
		if !errors.As(err, &ce) {
			return nil, withPath(err, path)
		}
		if err := l.lock(); err != nil {
			return nil, err
		}
		locked = true
		if h1, t, err = readChain(f, l.headPath); err != nil {
			l.unlock()
			return nil, withPath(err, path)
		}
	}
	dir, err := safefile.OpenDir(dirPath)
	if err != nil {
		if locked {
			l.unlock()
		}
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	l.dir = dir
	l.tail = t
	if !locked {
		if err := l.lock(); err != nil {
			dir.Close()
			return nil, err
		}
	}
	err = l.openLocked(h1)
	if uerr := l.unlock(); err == nil && uerr != nil {
		err = fmt.Errorf("eventlog: open %s: unlock: %w", path, uerr)
	}
	if err != nil {
		dir.Close()
		return nil, err
	}
	l.seq, l.hash = l.tail.seq, l.tail.hash
	l.durableSeq, l.durableHash = l.tail.seq, l.tail.hash
	return l, nil
}

// readChain reads the head, then verifies the log from its start to the
// end of its last complete record, which it returns as the tail; h1 is the
// head it checked the chain against.
func readChain(f *os.File, hp string) (h1 Head, t tail, err error) {
	head, haveHead, err := readHead(hp)
	if err != nil {
		return Head{}, tail{}, err
	}
	st, err := f.Stat()
	if err != nil {
		return Head{}, tail{}, err
	}
	var headHash string
	res, err := scan(io.NewSectionReader(f, 0, st.Size()), func(r *Record) error {
		if r.Seq == head.Seq {
			headHash = r.Hash
		}
		return nil
	})
	if err == nil {
		err = checkHead(res, head, haveHead, headHash)
	}
	if err != nil {
		return Head{}, tail{}, err
	}
	return head, tail{seq: res.records, hash: res.lastHash, size: res.goodEnd}, nil
}

// openLocked finishes Open under the file's lock: it reads what other
// writers appended since readChain, repairs a torn tail, checks the head as
// it is now (h1 was checked by readChain) and brings it up to the log.
func (l *Log) openLocked(h1 Head) error {
	head, haveHead, err := readHead(l.headPath)
	if err != nil {
		return withPath(err, l.path)
	}
	var headHash string
	verified := l.tail.seq // readChain checked these against h1
	c, err := l.catchUp(func(r *Record) {
		if r.Seq == head.Seq {
			headHash = r.Hash
		}
	})
	if haveHead && head.Seq <= verified && (head == h1 || head.Seq > h1.Seq) {
		// The head is the one readChain checked, or moved on within the
		// records it verified: only a writer that appended them moves it.
		headHash = head.Hash
	}
	if err == nil {
		err = withPath(checkHead(scanResult{records: l.tail.seq}, head, haveHead, headHash), l.path)
	}
	if err != nil {
		return err
	}
	// Persist the log's directory entry if Open just created the file.
	if err := l.syncDir(); err != nil {
		return fmt.Errorf("eventlog: open %s: %w", l.path, err)
	}
	if c.repair != nil {
		_, err := l.write(nil, c, true)
		return err
	}
	l.headSeq = head.Seq
	if !haveHead || head.Seq != l.tail.seq {
		if haveHead {
			l.logger.Info("eventlog: head checkpoint behind log, catching up",
				"path", l.path, "head_seq", head.Seq, "last_seq", l.tail.seq)
		}
		if err := l.writeHead(l.tail.seq, l.tail.hash); err != nil {
			return fmt.Errorf("eventlog: open %s: %w", l.path, err)
		}
	}
	return nil
}

// caughtUp is what catchUp found: a repair record to write first, if it
// truncated a torn tail.
type caughtUp struct {
	repair *Record
}

// catchUp runs under the file's lock. It reads and verifies what other
// writers appended after l.tail, advancing l.tail, and truncates a torn
// tail: under the lock no append is under way, so an incomplete last line
// was left by a writer that crashed or failed. It costs a stat when nothing
// was appended, and otherwise the reading of what was. visit, if set, sees
// each record read.
func (l *Log) catchUp(visit func(*Record)) (caughtUp, error) {
	st, err := l.f.Stat()
	if err != nil {
		return caughtUp{}, fmt.Errorf("eventlog: %s: %w", l.path, err)
	}
	size := st.Size()
	switch {
	case size == l.tail.size:
		return caughtUp{}, nil
	case size < l.tail.size:
		return caughtUp{}, &ChainError{Path: l.path, Seq: l.tail.seq, Reason: ReasonTruncated,
			Detail: fmt.Sprintf("log shrank to %d bytes, below the %d of its seq %d", size, l.tail.size, l.tail.seq)}
	}
	from := Position{Offset: l.tail.size, Seq: l.tail.seq, Hash: l.tail.hash}
	n := size - l.tail.size
	// A buffer no larger than what there is to read: typically a few
	// records of another writer.
	bufSize := int(min(n+1, 64<<10))
	pos, err := readRecords(io.NewSectionReader(l.f, l.tail.size, n), bufSize, from, 0, func(r Record) error {
		if visit != nil {
			visit(&r)
		}
		return nil
	})
	if err != nil {
		return caughtUp{}, withPath(err, l.path)
	}
	l.tail = tail{seq: pos.Seq, hash: pos.Hash, size: pos.Offset}
	if l.tail.seq == 0 {
		l.tail.hash = GenesisPrev
	}
	if size == pos.Offset {
		return caughtUp{}, nil
	}
	torn := size - pos.Offset
	if err := l.f.Truncate(pos.Offset); err != nil {
		return caughtUp{}, fmt.Errorf("eventlog: truncate torn tail of %s: %w", l.path, err)
	}
	if err := l.sync(l.f); err != nil {
		return caughtUp{}, fmt.Errorf("eventlog: fsync %s: %w", l.path, err)
	}
	l.mu.Lock()
	l.repaired += torn
	l.mu.Unlock()
	l.logger.Warn("eventlog: truncated torn tail left by an interrupted append",
		"path", l.path, "bytes_dropped", torn, "last_seq", l.tail.seq)
	// The repair is itself on the chain, so a reader of the log sees that
	// bytes were dropped here, and how many.
	data := fmt.Appendf(nil, `{"bytes_dropped":%d,"after_seq":%d}`, torn, l.tail.seq)
	return caughtUp{repair: &Record{Kind: KindRepair, Data: data}}, nil
}

// write runs under the file's lock, after catchUp: it writes c's repair
// record, if any, then b's records (sealed again if the chain's tail is
// not the one b was sealed after), fsyncs, and, with head, replaces the
// head if it is behind. It advances l.tail only once everything is
// durable. With nothing to write it writes and fsyncs nothing.
func (l *Log) write(b *batch, c caughtUp, head bool) (Commit, error) {
	var buf []byte
	var records int
	if b != nil {
		buf = b.buf
		for _, out := range b.outs {
			records += len(out)
		}
	}
	seq, hash := l.tail.seq, l.tail.hash
	if c.repair != nil || (b != nil && (b.seq != seq || b.hash != hash)) {
		var err error
		if buf, seq, hash, err = reseal(buf[:0], seq, hash, c.repair, b); err != nil {
			return Commit{}, err
		}
		if b != nil {
			b.buf = buf
		}
		if c.repair != nil {
			records++
		}
	} else if records > 0 {
		last := b.outs[len(b.outs)-1]
		seq, hash = last[len(last)-1].Seq, last[len(last)-1].Hash
	}
	cm := Commit{Records: records, Bytes: len(buf)}
	if len(buf) > 0 {
		if _, err := l.f.Write(buf); err != nil {
			return cm, fmt.Errorf("eventlog: write %s: %w", l.path, err)
		}
		start := time.Now()
		if err := l.sync(l.f); err != nil {
			return cm, fmt.Errorf("eventlog: fsync %s: %w", l.path, err)
		}
		if !l.opts.NoSync {
			cm.Fsync = time.Since(start)
		}
	}
	if head && seq != l.headSeq {
		if err := l.writeHead(seq, hash); err != nil {
			return cm, fmt.Errorf("eventlog: head update %s: %w", l.path, err)
		}
		cm.Head = true
	}
	l.tail = tail{seq: seq, hash: hash, size: l.tail.size + int64(len(buf))}
	return cm, nil
}

// reseal encodes repair, if set, and then b's records after (seq, hash)
// onto dst, completing the records in place.
func reseal(dst []byte, seq uint64, hash string, repair *Record, b *batch) ([]byte, uint64, string, error) {
	one := func(r *Record) error {
		seq++
		r.Seq, r.Prev = seq, hash
		if r.Time.IsZero() {
			r.Time = time.Now().UTC()
		}
		start := len(dst)
		var err error
		if dst, r.Hash, err = appendLine(dst, r); err != nil {
			return err
		}
		if len(dst)-start > MaxRecordBytes {
			return fmt.Errorf("%w: %d bytes", ErrRecordTooLarge, len(dst)-start)
		}
		dst = append(dst, '\n')
		hash = r.Hash
		return nil
	}
	if repair != nil {
		if err := one(repair); err != nil {
			return nil, 0, "", err
		}
	}
	if b != nil {
		for _, out := range b.outs {
			for i := range out {
				if err := one(&out[i]); err != nil {
					return nil, 0, "", fmt.Errorf("eventlog: sealing after seq %d: %w", seq-1, err)
				}
			}
		}
	}
	return dst, seq, hash, nil
}

// Repaired reports how many bytes of torn tail this Log truncated, in Open
// or, when another writer left one, before a commit; 0 if none. Each repair
// is recorded as a KindRepair record, the first the repairing commit writes.
func (l *Log) Repaired() (bytesDropped int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.repaired
}

// Last returns the seq and hash of the last durable record as of this Log's
// last commit (its own or another writer's record): the hash the next
// record's prev will hold unless another writer appends first. For an empty
// log it returns 0 and GenesisPrev. Keeping this hash outside the log's
// reach makes it an anchor for Verify.
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
// The one exception is an error wrapping ErrLocked: another writer held the
// file for longer than Options.LockTimeout, nothing of the call was written,
// and the Log stays usable.
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
	b := l.cur
	if b == nil {
		b = &batch{seq: l.seq, hash: l.hash}
		b.outs = b.one[:0]
		if n := len(l.spare); n > 0 {
			b.buf, l.spare = l.spare[n-1], l.spare[:n-1]
		}
	}
	buf, out, err := seal(b.buf, l.seq, l.hash, time.Now(), recs, nil)
	if err != nil {
		if l.cur == nil && cap(buf) > 0 {
			l.spare = append(l.spare, buf)
		}
		return nil, err
	}
	b.buf = buf
	b.outs = append(b.outs, out)
	l.cur = b
	l.seq, l.hash = out[len(out)-1].Seq, out[len(out)-1].Hash

	// Batches commit in order, one at a time: while b is not done and no
	// commit is under way, b is the queue.
	for !b.done {
		if l.committing {
			l.cond.Wait()
		} else {
			l.commit()
		}
	}
	if b.err != nil {
		return nil, b.err
	}
	return out, nil // resealed in place if the chain moved
}

// commit takes the file's lock, catches up with other writers, and writes,
// fsyncs and checkpoints everything queued. It is called with l.mu held and
// releases it during I/O; l.committing keeps it to one at a time.
func (l *Log) commit() {
	b := l.cur
	l.cur = nil
	if l.err != nil {
		b.done, b.err = true, l.err
		l.cond.Broadcast()
		return
	}
	_ = l.run(b) // b.err carries the outcome to its callers
}

// checkpointDue is the background checkpoint of Options.HeadInterval: it
// brings the head up to the log unless the Log was closed (Close writes
// the head itself) or broken.
func (l *Log) checkpointDue() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.headTimer = nil
	for l.committing {
		l.cond.Wait()
	}
	if l.closed || l.err != nil {
		return
	}
	_ = l.run(nil) // logged if it broke the Log; rescheduled if it timed out
}

// run commits b, or with b nil checkpoints the head alone (after catching
// up with other writers, and repairing a torn tail they left). It is
// called with l.mu held and no commit under way, and releases l.mu during
// I/O. It returns the commit's error.
func (l *Log) run(b *batch) error {
	l.committing = true
	l.mu.Unlock()

	head := b == nil || l.opts.HeadInterval <= 0
	var c Commit
	sticky := false
	err := l.lock()
	if err == nil {
		var cu caughtUp
		if cu, err = l.catchUp(nil); err == nil {
			c, err = l.write(b, cu, head)
		}
		if uerr := l.unlock(); err == nil && uerr != nil {
			err = fmt.Errorf("eventlog: unlock %s: %w", l.path, uerr)
		}
		sticky = err != nil
	} else if !errors.Is(err, ErrLocked) {
		sticky = true
	}
	c.Err = err
	if l.opts.OnCommit != nil {
		l.opts.OnCommit(c)
	}

	l.mu.Lock()
	l.committing = false
	if b != nil {
		b.done, b.err = true, err
	}
	switch {
	case sticky:
		l.err = err
		l.logger.Error("eventlog: append failed; refusing further appends until reopened",
			"path", l.path, "err", err)
	case err == nil:
		l.durableSeq, l.durableHash = l.tail.seq, l.tail.hash
	}
	// With a HeadInterval, a commit the head does not cover (or a
	// checkpoint that could not take the lock in time) schedules the next
	// checkpoint, unless one is due already or the Log is closing.
	if l.opts.HeadInterval > 0 && !sticky && !l.closed && l.headTimer == nil && l.headSeq != l.tail.seq {
		l.headTimer = time.AfterFunc(l.opts.HeadInterval, l.checkpointDue)
	}
	if l.cur == nil {
		// Queue the next append after the chain's actual tail, so that it
		// need not be sealed again unless another writer appends first.
		l.seq, l.hash = l.tail.seq, l.tail.hash
	}
	// Keep a modest buffer, and no more than two: one for the batch being
	// committed, one for the queue filling meanwhile; let a huge one go.
	if b != nil && cap(b.buf) <= 1<<20 && len(l.spare) < 2 {
		l.spare = append(l.spare, b.buf[:0])
	}
	l.cond.Broadcast()
	return err
}

// lock takes the file's lock, waiting up to Options.LockTimeout. It is
// called by one goroutine at a time (Open, then the committing one).
//
// The lock is tried first without waiting, which is all an uncontended
// commit pays. Otherwise a goroutine waits in flock, so that the kernel
// hands the lock over as soon as it is released (polling would lose it,
// time after time, to a busy writer that takes it again at once). A
// waiting flock cannot be cancelled: when the wait times out it is left
// pending, and the next call waits on it rather than starting another (two
// waits on one descriptor would share the lock, and the first unlock would
// release it for both); a lock it takes while no call waits is released at
// once, so an idle Log never keeps other writers out.
func (l *Log) lock() error {
	timeout := l.opts.LockTimeout
	if timeout == 0 {
		timeout = DefaultLockTimeout
	}
	var timer <-chan time.Time
	for {
		p := l.lockPending
		if p == nil {
			err := filelock.TryLock(l.f)
			if !errors.Is(err, filelock.ErrLocked) {
				if err != nil {
					return fmt.Errorf("eventlog: lock %s: %w", l.path, err)
				}
				return nil
			}
			if timeout < 0 {
				return fmt.Errorf("%w: %s", ErrLocked, l.path)
			}
			p = &lockWait{done: make(chan error, 1)}
			f := l.f
			go p.run(f)
			l.lockPending = p
		}
		p.mu.Lock()
		p.abandoned = false
		p.mu.Unlock()
		if timer == nil {
			t := time.NewTimer(timeout)
			defer t.Stop()
			timer = t.C
		}
		select {
		case err := <-p.done:
			l.lockPending = nil
			if errors.Is(err, errLockReleased) {
				continue // taken and let go while no one waited: try again
			}
			if err != nil {
				return fmt.Errorf("eventlog: lock %s: %w", l.path, err)
			}
			return nil
		case <-timer:
		}
		p.mu.Lock()
		select {
		case err := <-p.done: // it came just in time
			p.mu.Unlock()
			l.lockPending = nil
			if err == nil {
				return nil
			}
			if !errors.Is(err, errLockReleased) {
				return fmt.Errorf("eventlog: lock %s: %w", l.path, err)
			}
		default:
			p.abandoned = true
			p.mu.Unlock()
		}
		return fmt.Errorf("%w: %s (waited %v)", ErrLocked, l.path, timeout)
	}
}

// lockWait is a flock under way in its own goroutine.
type lockWait struct {
	done      chan error // receives the outcome, once
	mu        sync.Mutex
	abandoned bool // no one waits for it: release the lock once taken
}

var errLockReleased = errors.New("lock taken and released: no one waited")

func (p *lockWait) run(f file) {
	err := filelock.Lock(f)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && p.abandoned {
		err = filelock.Unlock(f)
		if err == nil {
			err = errLockReleased
		}
	}
	p.done <- err
}

func (l *Log) unlock() error { return filelock.Unlock(l.f) }

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
	return safefile.SyncDir(l.dir)
}

// writeHead replaces the head file with the current (seq, hash) atomically:
// a crash leaves either the old head or the new one, both valid because the
// log was fsynced first.
func (l *Log) writeHead(seq uint64, hash string) error {
	if err := writeHeadFile(l.headPath, Head{Seq: seq, Hash: hash}, safefile.Replace{Dir: l.dir, NoSync: l.opts.NoSync}); err != nil {
		return err
	}
	l.headSeq = seq
	return nil
}

// WriteHead writes h as the head file of the log at logPath (HeadPath),
// replacing any, atomically and durably: a temporary file, fsynced, renamed
// over the old one, the directory fsynced. It is for a log written by other
// means, such as one exported from another store, so that Verify and Open
// check it against h. It does not check h.
func WriteHead(logPath string, h Head) error {
	if err := writeHeadFile(headPath(logPath), h, safefile.Replace{}); err != nil {
		return fmt.Errorf("eventlog: write head of %s: %w", logPath, err)
	}
	return nil
}

// writeHeadFile replaces the head file at path through path+".tmp".
func writeHeadFile(path string, h Head, r safefile.Replace) error {
	r.TempSuffix = ".tmp"
	return r.WriteFile(path, AppendHead(make([]byte, 0, 96), h), 0o640)
}

// Close waits for queued appends to finish, brings the head up to the log
// if it trails (Options.HeadInterval), then closes the log. Further appends
// return ErrClosed. Closing twice is harmless. An error from the last
// checkpoint is returned; the records stay durable, and the next Open
// brings the head up to them.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	for l.committing || (l.cur != nil && l.err == nil) {
		l.cond.Wait()
	}
	if l.headTimer != nil {
		l.headTimer.Stop() // if it fired already, it finds the Log closed
		l.headTimer = nil
	}
	var err error
	if l.err == nil && l.headSeq != l.tail.seq {
		err = l.run(nil)
	}
	// A lock wait left pending by a timed-out commit holds a reference to
	// the descriptor: closing it waits for that flock to return, that is
	// for the other writer's commit to end, and then releases the lock.
	if ferr := l.f.Close(); err == nil {
		err = ferr
	}
	if derr := l.dir.Close(); err == nil {
		err = derr
	}
	return err
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
