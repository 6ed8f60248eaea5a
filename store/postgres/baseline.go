package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehost/gatehost/mcpgateway/baseline"
)

// Baseline returns the MCP gateway's tool trust baseline kept in the
// database (table gatehost_tool_baseline), shared by every replica.
//
// Each method is one operation under Options.OpTimeout: Load one query,
// the writes one transaction that changes the rows and reads the baseline
// back. AddIfAbsent inserts with ON CONFLICT DO NOTHING, so of replicas
// adding different definitions of one tool at once exactly one wins and
// all read back the winner. Every row read is checked (baseline.Entry.
// Validate): a definition that does not match its digest fails the
// operation with an error wrapping baseline.ErrInvalid that names the row,
// and a write that would read such a row back is rolled back. Database
// failures wrap both baseline.ErrStore and ErrUnavailable.
func (db *DB) Baseline() baseline.Store { return baselineStore{db} }

type baselineStore struct{ db *DB }

const baselineSelect = `SELECT upstream, tool, digest, definition, approved_by, approved_at FROM gatehost_tool_baseline`

// readBaseline reads and checks every row.
func readBaseline(ctx context.Context, q querier) (*baseline.Set, error) {
	rows, err := q.Query(ctx, baselineSelect)
	if err != nil {
		return nil, err
	}
	entries, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (baseline.Entry, error) {
		var e baseline.Entry
		var def []byte
		err := r.Scan(&e.Upstream, &e.Tool, &e.Digest, &def, &e.ApprovedBy, &e.ApprovedAt)
		e.Definition = def
		return e, err
	})
	if err != nil {
		return nil, err
	}
	s, err := baseline.NewSet(entries)
	if err != nil {
		// The database answered; its content is refused.
		return nil, Passthrough(fmt.Errorf("table gatehost_tool_baseline: %w", err))
	}
	return s, nil
}

// baselineErr marks a database failure as the baseline's ErrStore too.
func baselineErr(err error) error {
	if err == nil || errors.Is(err, baseline.ErrInvalid) || errors.Is(err, baseline.ErrStore) {
		return err
	}
	return fmt.Errorf("%w: %w", baseline.ErrStore, err)
}

func (b baselineStore) Load(ctx context.Context) (*baseline.Set, error) {
	var s *baseline.Set
	err := b.db.Op(ctx, "baseline_load", func(ctx context.Context) error {
		var err error
		s, err = readBaseline(ctx, b.db.pool)
		return err
	})
	if err != nil {
		return nil, baselineErr(err)
	}
	return s, nil
}

func (b baselineStore) AddIfAbsent(ctx context.Context, entries []baseline.Entry) (*baseline.Set, error) {
	return b.write(ctx, "baseline_add", entries, `ON CONFLICT (upstream, tool) DO NOTHING`)
}

func (b baselineStore) Approve(ctx context.Context, entries []baseline.Entry) (*baseline.Set, error) {
	return b.write(ctx, "baseline_approve", entries, `ON CONFLICT (upstream, tool) DO UPDATE SET
		digest = EXCLUDED.digest, definition = EXCLUDED.definition,
		approved_by = EXCLUDED.approved_by, approved_at = EXCLUDED.approved_at`)
}

// write inserts entries with the conflict clause onConflict and reads the
// baseline back, in one transaction.
func (b baselineStore) write(ctx context.Context, op string, entries []baseline.Entry, onConflict string) (*baseline.Set, error) {
	entries, err := baseline.CheckEntries(entries)
	if err != nil {
		return nil, err
	}
	n := len(entries)
	ups, tools, digests, bys := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	defs, ats := make([][]byte, n), make([]time.Time, n)
	for i, e := range entries {
		ups[i], tools[i], digests[i], defs[i], bys[i], ats[i] = e.Upstream, e.Tool, e.Digest, e.Definition, e.ApprovedBy, e.ApprovedAt
	}
	var s *baseline.Set
	err = b.db.Tx(ctx, op, func(ctx context.Context, tx pgx.Tx) error {
		if n > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO gatehost_tool_baseline (upstream, tool, digest, definition, approved_by, approved_at)
				SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::timestamptz[]) `+onConflict,
				ups, tools, digests, defs, bys, ats); err != nil {
				return err
			}
		}
		var err error
		s, err = readBaseline(ctx, tx)
		return err
	})
	if err != nil {
		return nil, baselineErr(err)
	}
	return s, nil
}

func (b baselineStore) Remove(ctx context.Context, keys []baseline.Key) (*baseline.Set, error) {
	if err := baseline.CheckKeys(keys); err != nil {
		return nil, err
	}
	ups, tools := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		ups[i], tools[i] = k.Upstream, k.Tool
	}
	var s *baseline.Set
	err := b.db.Tx(ctx, "baseline_remove", func(ctx context.Context, tx pgx.Tx) error {
		if len(keys) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM gatehost_tool_baseline b
				USING unnest($1::text[], $2::text[]) AS k (upstream, tool)
				WHERE b.upstream = k.upstream AND b.tool = k.tool`, ups, tools); err != nil {
				return err
			}
		}
		var err error
		s, err = readBaseline(ctx, tx)
		return err
	})
	if err != nil {
		return nil, baselineErr(err)
	}
	return s, nil
}
