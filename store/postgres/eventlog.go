package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehost/gatehost/host/eventlog"
)

// GlobalChain is the chain every replica appends to when the fleet keeps
// one event log (store.chain: global); otherwise each replica's chain is
// named by its node id.
const GlobalChain = "global"

// Group commit caps: one transaction takes queued appends until it holds
// this many records or line bytes (always at least one append), so that a
// burst does not become one transaction too large for OpTimeout.
const (
	maxGroupRecords = 1000
	maxGroupBytes   = 8 << 20
)

// Log is one hash chain of the event log in the store: an
// eventlog.Appender whose records, lines and chaining are byte-for-byte
// those of a file log (eventlog.Seal), so an exported chain verifies with
// eventlog.Verify. Its methods are safe for concurrent use.
//
// Each group commit is one transaction: lock the chain's head row, seal the
// queued records after it, insert their lines, move the head, commit.
// Concurrent Appends of one Log queued while a transaction is in flight go
// in the next one; Logs of other replicas on the same chain wait for the
// head row's lock, so a chain is serialized across the fleet.
type Log struct {
	db    *DB
	chain string

	mu         sync.Mutex
	cond       sync.Cond // broadcast when a commit finishes
	queue      []*pendingAppend
	committing bool
	closed     bool
	last       eventlog.Head // the last committed head this Log knows
}

var _ eventlog.Appender = (*Log)(nil)

// pendingAppend is one Append call waiting for its group commit.
type pendingAppend struct {
	recs  []eventlog.Record // validated, times set
	bytes int               // their lines' size
	out   []eventlog.Record
	err   error
	done  bool
}

// EventLog opens the chain named chain (a node id, or GlobalChain) for
// appending, creating its head row (seq 0, eventlog.GenesisPrev) if the
// chain is new. It checks the head against the chain's record at the
// head's seq, and refuses a chain whose head is missing, behind or
// different with a *eventlog.ChainError, as eventlog.Open refuses such a
// file; VerifyChains checks whole chains. Other errors wrap ErrConfig (an
// invalid chain name) or ErrUnavailable.
func (db *DB) EventLog(ctx context.Context, chain string) (*Log, error) {
	if !ValidNodeID(chain) {
		return nil, fmt.Errorf("%w: chain %q: want 1 to %d bytes of [A-Za-z0-9_.-]", ErrConfig, chain, MaxNodeIDBytes)
	}
	var head eventlog.Head
	err := db.Op(ctx, "eventlog_open", func(ctx context.Context) error {
		var err error
		head, err = lockHead(ctx, db.pool, chain, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	l := &Log{db: db, chain: chain, last: head}
	l.cond.L = &l.mu
	return l, nil
}

// lockHead reads the head of chain — under a row lock FOR UPDATE when
// forUpdate — creating the genesis head if the chain has no head and no
// records, and checks it against the record at its seq. A broken head is
// returned as a Passthrough *eventlog.ChainError.
func lockHead(ctx context.Context, q querier, chain string, forUpdate bool) (eventlog.Head, error) {
	for created := false; ; created = true {
		seq, hash, recHash, err := readHeadRow(ctx, q, chain, forUpdate)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && !created:
			// Only a chain without records starts at genesis: a chain whose
			// head row is gone must not restart, hiding a truncation.
			if _, err := q.Exec(ctx, `INSERT INTO gatehost_chain_heads (chain, seq, hash)
				SELECT $1, 0, $2 WHERE NOT EXISTS (SELECT 1 FROM gatehost_events WHERE chain = $1)
				ON CONFLICT (chain) DO NOTHING`, chain, eventlog.GenesisPrev); err != nil {
				return eventlog.Head{}, fmt.Errorf("create chain head: %w", err)
			}
			continue
		case errors.Is(err, pgx.ErrNoRows):
			return eventlog.Head{}, Passthrough(&eventlog.ChainError{Path: chainPath(chain), Reason: eventlog.ReasonHeadMissing,
				Detail: "the chain has records but no head row"})
		case err != nil:
			return eventlog.Head{}, fmt.Errorf("read chain head: %w", err)
		}
		head := eventlog.Head{Seq: uint64(seq), Hash: hash}
		switch {
		case seq < 0 || !validHead(head):
			return eventlog.Head{}, Passthrough(&eventlog.ChainError{Path: chainPath(chain), Reason: eventlog.ReasonBadHead,
				Detail: fmt.Sprintf("head row seq %d hash %q", seq, hash)})
		case seq > 0 && recHash == nil:
			return eventlog.Head{}, Passthrough(&eventlog.ChainError{Path: chainPath(chain), Seq: head.Seq, Reason: eventlog.ReasonTruncated,
				Detail: "no record at the head's seq"})
		case seq > 0 && *recHash != hash:
			return eventlog.Head{}, Passthrough(&eventlog.ChainError{Path: chainPath(chain), Seq: head.Seq, Reason: eventlog.ReasonHeadMismatch,
				Detail: fmt.Sprintf("head hash %s, record hash %s", hash, *recHash)})
		}
		return head, nil
	}
}

// readHeadRow reads chain's head row and the hash of the record at its
// seq (nil if there is none); pgx.ErrNoRows if there is no head row.
func readHeadRow(ctx context.Context, q querier, chain string, forUpdate bool) (seq int64, hash string, recHash *string, err error) {
	if !forUpdate {
		// One statement: one snapshot for both rows.
		err = q.QueryRow(ctx, `SELECT h.seq, h.hash, e.hash FROM gatehost_chain_heads h
			LEFT JOIN gatehost_events e ON e.chain = h.chain AND e.seq = h.seq
			WHERE h.chain = $1`, chain).Scan(&seq, &hash, &recHash)
		return seq, hash, recHash, err
	}
	// Two statements, pipelined: the lock may be granted only once another
	// replica's append commits, and a statement's snapshot predates its
	// wait, so the record at the head's new seq is visible only to a
	// statement that starts after the lock is held.
	b := &pgx.Batch{}
	b.Queue(`SELECT seq, hash FROM gatehost_chain_heads WHERE chain = $1 FOR UPDATE`, chain)
	b.Queue(`SELECT hash FROM gatehost_events
		WHERE chain = $1 AND seq = (SELECT seq FROM gatehost_chain_heads WHERE chain = $1)`, chain)
	br := q.SendBatch(ctx, b)
	defer br.Close()
	if err = br.QueryRow().Scan(&seq, &hash); err != nil {
		return 0, "", nil, err
	}
	if err = br.QueryRow().Scan(&recHash); errors.Is(err, pgx.ErrNoRows) {
		err = nil
	}
	if err == nil {
		err = br.Close()
	}
	return seq, hash, recHash, err
}

// validHead reports whether h can be chained from: Seal's own check.
func validHead(h eventlog.Head) bool {
	_, _, err := eventlog.Seal(h.Seq, h.Hash, time.Time{}, nil)
	return err == nil
}

// chainPath names a chain in a *eventlog.ChainError's Path.
func chainPath(chain string) string { return "postgres chain " + chain }

// Chain returns the name of the chain l appends to.
func (l *Log) Chain() string { return l.chain }

// Last returns the seq and hash of the last record this Log committed, or
// of the head it read when opened if it has committed none: the chain's
// tail as far as this replica knows (other replicas may have appended
// since, on a shared chain).
func (l *Log) Last() (seq uint64, hash string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last.Seq, l.last.Hash
}

// Append completes recs as eventlog.Log.Append does (seq, prev, hash, a
// zero time set to now, times in UTC) and commits them to the chain,
// returning the completed records only once the transaction holding them
// has committed. The records of one call are contiguous on the chain.
//
// A record that cannot be encoded, exceeds eventlog.MaxRecordBytes, or
// holds a NUL byte in kind, run_id, pipeline or verdict (which PostgreSQL
// text columns cannot store) fails the call with an error wrapping
// eventlog.ErrInvalidRecord or eventlog.ErrRecordTooLarge before the
// database is touched. Every other failure — the database unreachable, the
// transaction past OpTimeout, the chain's head broken — wraps
// ErrUnavailable and means the records may or may not be stored, as with a
// file log; the next Append reads the chain's head afresh either way.
// After Close, Append returns eventlog.ErrClosed.
func (l *Log) Append(recs ...eventlog.Record) ([]eventlog.Record, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	// Seal once from genesis to validate and size the records and fix
	// their times; the commit seals them again after the real head.
	sealed, lines, err := eventlog.Seal(0, eventlog.GenesisPrev, time.Now(), recs)
	if err != nil {
		return nil, err
	}
	p := &pendingAppend{recs: sealed}
	for i, r := range sealed {
		for _, col := range [...]string{r.Kind, r.RunID, r.Pipeline, r.Verdict} {
			if strings.IndexByte(col, 0) >= 0 {
				return nil, fmt.Errorf("%w: record %d of %d: NUL byte in a column field", eventlog.ErrInvalidRecord, i+1, len(recs))
			}
		}
		p.bytes += len(lines[i])
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, eventlog.ErrClosed
	}
	l.queue = append(l.queue, p)
	for !p.done {
		if l.committing {
			l.cond.Wait()
		} else {
			l.commit()
		}
	}
	return p.out, p.err
}

// commit commits a group of queued appends in one transaction. It is
// called with l.mu held and releases it during the transaction;
// l.committing keeps it to one at a time.
func (l *Log) commit() {
	n, records, bytes := 0, 0, 0
	for n < len(l.queue) && (n == 0 || (records+len(l.queue[n].recs) <= maxGroupRecords && bytes+l.queue[n].bytes <= maxGroupBytes)) {
		records += len(l.queue[n].recs)
		bytes += l.queue[n].bytes
		n++
	}
	group := l.queue[:n:n]
	l.queue = l.queue[n:]
	l.committing = true
	l.mu.Unlock()

	head, err := l.commitGroup(group)

	l.mu.Lock()
	l.committing = false
	for _, p := range group {
		if err != nil {
			p.out, p.err = nil, err
		}
		p.done = true
	}
	if err == nil {
		// This Log's commits are serialized and its chain only grows, so
		// each commit's head is at or past the last one's.
		l.last = head
	}
	l.cond.Broadcast()
}

// commitGroup runs the transaction of one group commit and returns the
// chain's new head. On success each append's out or err is set (err only
// for one whose records outgrew MaxRecordBytes once sealed at their real
// seqs; the others are committed).
func (l *Log) commitGroup(group []*pendingAppend) (eventlog.Head, error) {
	var head eventlog.Head
	err := l.db.Tx(context.Background(), "eventlog_append", func(ctx context.Context, tx pgx.Tx) error {
		tail, err := lockHead(ctx, tx, l.chain, true)
		if err != nil {
			var pass *passthrough
			if errors.As(err, &pass) {
				// A broken chain is no answer for the host: unavailable.
				return fmt.Errorf("%w: %w", ErrUnavailable, pass.err)
			}
			return err
		}
		var cols eventColumns
		for _, p := range group {
			sealed, lines, err := eventlog.Seal(tail.Seq, tail.Hash, time.Time{}, p.recs)
			if err != nil {
				// Only a record within a few bytes of the cap, whose seq
				// has more digits than the check's, gets here.
				p.err = err
				continue
			}
			p.out, p.err = sealed, nil
			cols.add(sealed, lines)
			last := sealed[len(sealed)-1]
			tail = eventlog.Head{Seq: last.Seq, Hash: last.Hash}
		}
		head = tail
		if len(cols.seq) == 0 {
			return nil
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO gatehost_events (chain, seq, hash, prev, time, kind, run_id, pipeline, verdict, line, node)
			SELECT $1, s, h, p, t, k, r, pl, v, ln, $2
			FROM unnest($3::bigint[], $4::text[], $5::text[], $6::timestamptz[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
				AS u(s, h, p, t, k, r, pl, v, ln)`,
			l.chain, l.db.NodeID(), cols.seq, cols.hash, cols.prev, cols.time, cols.kind, cols.runID, cols.pipeline, cols.verdict, cols.line)
		b.Queue(`UPDATE gatehost_chain_heads SET seq = $2, hash = $3, updated_at = now() WHERE chain = $1`,
			l.chain, int64(head.Seq), head.Hash)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return eventlog.Head{}, fmt.Errorf("event log chain %s: %w", l.chain, err)
	}
	return head, nil
}

// eventColumns are the columns of the rows one transaction inserts, as
// arrays for unnest: one statement for the whole group.
type eventColumns struct {
	seq                                              []int64
	time                                             []time.Time
	hash, prev, kind, runID, pipeline, verdict, line []string
}

func (c *eventColumns) add(recs []eventlog.Record, lines [][]byte) {
	for i, r := range recs {
		c.seq = append(c.seq, int64(r.Seq))
		c.time = append(c.time, r.Time)
		c.hash = append(c.hash, r.Hash)
		c.prev = append(c.prev, r.Prev)
		c.kind = append(c.kind, r.Kind)
		c.runID = append(c.runID, r.RunID)
		c.pipeline = append(c.pipeline, r.Pipeline)
		c.verdict = append(c.verdict, r.Verdict)
		c.line = append(c.line, string(lines[i]))
	}
}

// Close waits for queued appends to finish; further appends return
// eventlog.ErrClosed. It does not close the DB. Closing twice is harmless.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for l.committing || len(l.queue) > 0 {
		if !l.committing {
			l.commit()
			continue
		}
		l.cond.Wait()
	}
	return nil
}
