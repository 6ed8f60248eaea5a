package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/store"
)

// Reasons, beside eventlog's, that a chain in the store fails verification
// (eventlog.ChainError.Reason).
const (
	// ReasonColumnMismatch: a row's columns (seq, hash, prev, time, kind,
	// run_id, pipeline, verdict) disagree with its line, or a stored line
	// holds more than one line.
	ReasonColumnMismatch = "column_mismatch"
	// ReasonChainNotFound: a chain asked for has neither records nor head.
	ReasonChainNotFound = "chain_not_found"
)

// maxGaps caps the gaps a ChainReport lists.
const maxGaps = 100

// Read batches: rows are fetched maxBatchRows at a time at most, fewer
// when lines are long, so that one batch holds about batchBytes of lines.
const (
	maxBatchRows = 1000
	batchBytes   = 8 << 20
)

// ChainReport, Gap and VerifyChainsOptions are the store package's: the
// verification any store that keeps chains reports (store.ChainReader).
type (
	ChainReport         = store.ChainReport
	Gap                 = store.Gap
	VerifyChainsOptions = store.VerifyChainsOptions
)

// VerifyChains verifies chains of the event log as eventlog.Verify does a
// file, with each chain's head row as its head checkpoint, and returns a
// report per chain in name order. Each chain is streamed in batches (one
// Op each, bounded memory): every line must be the canonical encoding of
// its record and chain onto the one before, seqs without gaps (a deleted
// row is eventlog.ReasonSeqGap at the seq after it), the head row must be
// on the chain, and each row's columns must agree with its line
// (ReasonColumnMismatch). A broken chain is reported in its
// ChainReport.Err; the error returned is for a chain that could not be
// read at all (wrapping ErrUnavailable) or bad options, and comes with
// the reports of the chains verified before it.
func (db *DB) VerifyChains(ctx context.Context, opts VerifyChainsOptions) ([]ChainReport, error) {
	chains := opts.Chains
	if len(chains) == 0 {
		err := db.Op(ctx, "eventlog_chains", func(ctx context.Context) error {
			rows, err := db.pool.Query(ctx, `SELECT chain FROM gatehost_chain_heads
				UNION SELECT DISTINCT chain FROM gatehost_events ORDER BY 1`)
			if err != nil {
				return err
			}
			chains, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
		if err != nil {
			return nil, err
		}
	} else {
		chains = slices.Clone(chains)
		slices.Sort(chains)
		chains = slices.Compact(chains)
	}
	for chain := range opts.Anchors {
		if !slices.Contains(chains, chain) {
			return nil, fmt.Errorf("pgstore: anchor for chain %q, which is not verified", chain)
		}
	}
	var reports []ChainReport
	for _, chain := range chains {
		rep, err := db.verifyChain(ctx, chain, opts.Anchors[chain])
		if err != nil {
			return reports, fmt.Errorf("verify chain %s: %w", chain, err)
		}
		reports = append(reports, rep)
	}
	return reports, nil
}

func (db *DB) verifyChain(ctx context.Context, chain, anchor string) (ChainReport, error) {
	rep := ChainReport{Chain: chain}
	// The head first: appends only ever move the chain ahead of it.
	head, found, err := db.readHead(ctx, chain)
	if err != nil {
		return rep, err
	}
	rep.Head = head
	r := db.chainReader(ctx, chain, math.MaxInt64)
	vr, verr := eventlog.VerifyLines(r, head, eventlog.VerifyOptions{Anchor: anchor, Check: r.check, NoTornTail: true})
	rep.Report = vr
	if r.err != nil {
		return rep, r.err // the database failed, not the chain
	}
	if verr == nil && !found && vr.Records == 0 {
		verr = &eventlog.ChainError{Reason: ReasonChainNotFound}
	}
	var ce *eventlog.ChainError
	if verr != nil && !errors.As(verr, &ce) {
		return rep, verr
	}
	if ce != nil {
		ce.Path = chainPath(chain)
		rep.Err = ce
		if ce.Reason == eventlog.ReasonSeqGap {
			// Diagnostic only: the chain is reported broken either way.
			rep.Gaps, _ = db.chainGaps(ctx, chain)
		}
	}
	return rep, nil
}

// readHead reads chain's head row; found is false if it has none.
func (db *DB) readHead(ctx context.Context, chain string) (head eventlog.Head, found bool, err error) {
	err = db.Op(ctx, "eventlog_head", func(ctx context.Context) error {
		var seq int64
		err := db.pool.QueryRow(ctx, `SELECT seq, hash FROM gatehost_chain_heads WHERE chain = $1`, chain).Scan(&seq, &head.Hash)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		if seq < 0 {
			// Not a seq: VerifyLines reports it as a bad head.
			head.Seq, head.Hash = 0, "invalid seq"
			return nil
		}
		head.Seq = uint64(seq)
		return nil
	})
	return head, found, err
}

// chainGaps lists the missing seq ranges of chain, up to maxGaps.
func (db *DB) chainGaps(ctx context.Context, chain string) ([]Gap, error) {
	var gaps []Gap
	err := db.Op(ctx, "eventlog_gaps", func(ctx context.Context) error {
		rows, err := db.pool.Query(ctx, `SELECT prev + 1, seq - 1 FROM (
				SELECT seq, coalesce(lag(seq) OVER (ORDER BY seq), 0) AS prev
				FROM gatehost_events WHERE chain = $1) s
			WHERE seq <> prev + 1 ORDER BY seq LIMIT $2`, chain, maxGaps)
		if err != nil {
			return err
		}
		gaps, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Gap, error) {
			var from, to int64
			err := row.Scan(&from, &to)
			return Gap{From: uint64(from), To: uint64(to)}, err
		})
		return err
	})
	return gaps, err
}

// ExportChain writes the lines of chain, each followed by "\n", to w — the
// content of a file log — up to its head row, which it returns: written
// beside the file with eventlog.WriteHead, the pair verifies with
// eventlog.Verify. Rows are read in batches (bounded memory). It exports
// what is stored without checking it: verify the result. Errors wrap
// ErrUnavailable, or are a *eventlog.ChainError with ReasonChainNotFound
// for a chain without a head row, or w's.
func (db *DB) ExportChain(ctx context.Context, chain string, w io.Writer) (eventlog.Head, error) {
	head, found, err := db.readHead(ctx, chain)
	if err != nil {
		return eventlog.Head{}, err
	}
	if !found {
		return eventlog.Head{}, &eventlog.ChainError{Path: chainPath(chain), Reason: ReasonChainNotFound, Detail: "no head row"}
	}
	r := db.chainReader(ctx, chain, int64(min(head.Seq, math.MaxInt64)))
	if _, err := io.Copy(w, r); err != nil {
		return eventlog.Head{}, fmt.Errorf("export chain %s: %w", chain, err)
	}
	return head, nil
}

// eventRow is a stored record: its line and the columns that repeat it.
type eventRow struct {
	seq                                     int64
	time                                    time.Time
	hash, prev, kind, runID, pipeline, verd string
	line                                    string
}

// chainRows streams the lines of a chain as a log file's content, fetching
// rows in batches, and checks each verified record against its row's
// columns (check, for eventlog.VerifyOptions.Check).
type chainRows struct {
	db    *DB
	ctx   context.Context
	chain string
	after int64 // the last seq fetched
	upTo  int64 // fetch rows with seq ≤ upTo
	limit int   // rows in the next batch
	done  bool  // the last batch was fetched

	batch  []eventRow
	line   []byte     // the unread part of the line being served
	served []eventRow // rows served and not yet checked, oldest first
	err    error      // the database's failure, if one ended the stream
}

func (db *DB) chainReader(ctx context.Context, chain string, upTo int64) *chainRows {
	return &chainRows{db: db, ctx: ctx, chain: chain, upTo: upTo, limit: 256}
}

func (r *chainRows) Read(p []byte) (int, error) {
	for len(r.line) == 0 {
		if len(r.batch) == 0 {
			if r.done {
				return 0, io.EOF
			}
			if err := r.fetch(); err != nil {
				r.err = err
				return 0, err
			}
			continue
		}
		row := r.batch[0]
		r.batch[0] = eventRow{}
		r.batch = r.batch[1:]
		r.line = append(append(r.line[:0], row.line...), '\n')
		row.line = ""
		r.served = append(r.served, row)
	}
	n := copy(p, r.line)
	r.line = r.line[n:]
	return n, nil
}

func (r *chainRows) fetch() error {
	var rows []eventRow
	err := r.db.Op(r.ctx, "eventlog_read", func(ctx context.Context) error {
		q, err := r.db.pool.Query(ctx, `SELECT seq, time, hash, prev, kind, run_id, pipeline, verdict, line
			FROM gatehost_events WHERE chain = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4`,
			r.chain, r.after, r.upTo, r.limit)
		if err != nil {
			return err
		}
		rows, err = pgx.CollectRows(q, func(row pgx.CollectableRow) (eventRow, error) {
			var e eventRow
			err := row.Scan(&e.seq, &e.time, &e.hash, &e.prev, &e.kind, &e.runID, &e.pipeline, &e.verd, &e.line)
			return e, err
		})
		return err
	})
	if err != nil {
		return err
	}
	if len(rows) < r.limit {
		r.done = true
	}
	if len(rows) > 0 {
		r.after = rows[len(rows)-1].seq
		size := 0
		for _, row := range rows {
			size += len(row.line) + 1
		}
		// Aim the next batch at batchBytes of lines.
		r.limit = max(1, min(maxBatchRows, len(rows)*batchBytes/max(size, 1)))
	}
	r.batch = rows
	return nil
}

// check compares rec, just verified from a served line, with the columns
// of that line's row.
func (r *chainRows) check(rec *eventlog.Record) error {
	if len(r.served) == 0 {
		return &eventlog.ChainError{Seq: rec.Seq, Reason: ReasonColumnMismatch, Detail: "a stored line holds more than one line"}
	}
	row := r.served[0]
	r.served = r.served[1:]
	var col string
	switch {
	case row.seq != int64(rec.Seq):
		col = fmt.Sprintf("seq (column %d)", row.seq)
	case row.hash != rec.Hash:
		col = "hash"
	case row.prev != rec.Prev:
		col = "prev"
	case !row.time.Equal(rec.Time.Truncate(time.Microsecond)): // the column keeps microseconds
		col = "time"
	case row.kind != rec.Kind:
		col = "kind"
	case row.runID != rec.RunID:
		col = "run_id"
	case row.pipeline != rec.Pipeline:
		col = "pipeline"
	case row.verd != rec.Verdict:
		col = "verdict"
	default:
		return nil
	}
	return &eventlog.ChainError{Seq: rec.Seq, Reason: ReasonColumnMismatch, Detail: "column " + col + " differs from the line"}
}
