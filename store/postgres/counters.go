package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/counter"
)

// maxPrune bounds the expired rows one Add deletes, so that an add after a
// long quiet spell stays short; the adds that follow delete the rest.
const maxPrune = 1000

// Counters returns the database's counts of accepted calls (tables
// gatehost_counter_calls and gatehost_counter_totals), shared by every
// replica. It keeps no cache: every Counts is a query, and every Add a
// transaction that commits before it returns, so the next Counts of every
// replica sees it. Calls older than abi.MaxCounterWindow are deleted.
// Errors wrap counter.ErrStore and ErrUnavailable.
func (db *DB) Counters() counter.Store { return &counterStore{db: db} }

type counterStore struct{ db *DB }

func counterErr(op string, err error) error {
	return fmt.Errorf("%w: postgresql: %s: %w", counter.ErrStore, op, err)
}

// Add implements counter.Store.
func (s *counterStore) Add(ctx context.Context, c counter.Call) error {
	if c.Session == "" && c.Principal == "" {
		return nil
	}
	err := s.db.Tx(ctx, "counters.add", func(ctx context.Context, tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO gatehost_counter_calls (session, principal, tool, at) VALUES ($1, $2, $3, $4)`,
			c.Session, c.Principal, c.Tool, c.At.UTC())
		if c.Session != "" {
			b.Queue(`INSERT INTO gatehost_counter_totals (session, tool, calls) VALUES ($1, $2, 1)
				ON CONFLICT (session, tool) DO UPDATE SET calls = gatehost_counter_totals.calls + 1`, c.Session, c.Tool)
		}
		b.Queue(`DELETE FROM gatehost_counter_calls WHERE id IN
			(SELECT id FROM gatehost_counter_calls WHERE at <= $1 LIMIT $2)`, c.At.Add(-abi.MaxCounterWindow).UTC(), maxPrune)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return counterErr("add", err)
	}
	return nil
}

// Counts implements counter.Store. It reads in one transaction, hence
// from one snapshot.
func (s *counterStore) Counts(ctx context.Context, q counter.Query) (counter.Counts, error) {
	c := counter.Counts{Session: map[string]int64{}, Window: map[time.Duration]map[string]int64{}, Principal: map[time.Duration]map[string]int64{}}
	secs := make([]int64, len(q.Windows))
	for i, w := range q.Windows {
		secs[i] = int64(w / time.Second)
		c.Window[w], c.Principal[w] = map[string]int64{}, map[string]int64{}
	}
	err := s.db.Tx(ctx, "counters.counts", func(ctx context.Context, tx pgx.Tx) error {
		if q.Session != "" {
			if err := scanCounts(ctx, tx, func(_ int64, tool string, n int64) { c.Session[tool] = n },
				`SELECT 0::bigint, tool, calls FROM gatehost_counter_totals WHERE session = $1`, q.Session); err != nil {
				return err
			}
		}
		const windowed = `SELECT w, tool, count(*) FROM gatehost_counter_calls, unnest($2::bigint[]) AS w
			WHERE %s = $1 AND at > $3::timestamptz - make_interval(secs => w) GROUP BY w, tool`
		for _, k := range []struct {
			col, key string
			out      map[time.Duration]map[string]int64
		}{{"session", q.Session, c.Window}, {"principal", q.Principal, c.Principal}} {
			if k.key == "" || len(secs) == 0 {
				continue
			}
			err := scanCounts(ctx, tx, func(w int64, tool string, n int64) { k.out[time.Duration(w)*time.Second][tool] = n },
				fmt.Sprintf(windowed, k.col), k.key, secs, q.Now.UTC())
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return counter.Counts{}, counterErr("counts", err)
	}
	return c, nil
}

func scanCounts(ctx context.Context, tx pgx.Tx, fn func(w int64, tool string, n int64), sql string, args ...any) error {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var w, n int64
		var tool string
		if err := rows.Scan(&w, &tool, &n); err != nil {
			return err
		}
		fn(w, tool, n)
	}
	return rows.Err()
}
