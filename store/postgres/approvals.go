package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehost/gatehost/approval"
)

// Approvals returns the approvals kept in the database (table
// gatehost_approvals), shared by every replica: an approval minted on one
// is usable on any other, once.
//
// Each method is one transaction under Options.OpTimeout. Add takes a
// transaction-scoped advisory lock, so that concurrent mints count the
// outstanding approvals one at a time (the cap holds across replicas),
// deletes the expired rows, counts and inserts. Take locks the row (SELECT
// … FOR UPDATE) and marks it used, or deletes it when expired: a second
// Take of the same id, on any replica, waits for the first and then reads
// it used. Times are the callers' (approval.Options.Now), so replicas'
// clocks should agree to well within a TTL. Database failures wrap both
// approval.ErrStore and ErrUnavailable.
func (db *DB) Approvals() approval.Store { return approvalStore{db} }

type approvalStore struct{ db *DB }

// approvalsLock is the advisory lock key of a mint.
const approvalsLock int64 = 0x6761746561707031 // "gateapp1"

// approvalErr marks a database failure as the approvals' ErrStore too.
func approvalErr(err error) error {
	for _, keep := range []error{approval.ErrFull, approval.ErrStore, approval.ErrNoRequest, approval.ErrDecided, approval.ErrRequestExpired} {
		if errors.Is(err, keep) {
			return err
		}
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", approval.ErrStore, err)
}

func (s approvalStore) Add(ctx context.Context, a approval.Approval, now time.Time, max int) error {
	if err := a.Check(); err != nil {
		return err
	}
	err := s.db.Tx(ctx, "approval_add", func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", approvalsLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM gatehost_approvals WHERE expires_at <= $1", now); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM gatehost_approvals").Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return Passthrough(approval.ErrFull)
		}
		_, err := tx.Exec(ctx, `INSERT INTO gatehost_approvals
			(id, pipeline, session, caller_key, tool, schema_digest, subject_sha256, approver, request_id, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			a.ID, a.Pipeline, a.Session, a.CallerKey, a.Tool, a.SchemaDigest, a.SubjectSHA256, a.Approver, a.Request, a.ExpiresAt)
		return err
	})
	return approvalErr(err)
}

func (s approvalStore) Take(ctx context.Context, id string, now time.Time) (approval.Stored, bool, error) {
	var st approval.Stored
	found := false
	err := s.db.Tx(ctx, "approval_take", func(ctx context.Context, tx pgx.Tx) error {
		var usedAt *time.Time
		err := tx.QueryRow(ctx, `SELECT id, pipeline, session, caller_key, tool, schema_digest, subject_sha256, approver, request_id, expires_at, used_at
			FROM gatehost_approvals WHERE id = $1 FOR UPDATE`, id).Scan(
			&st.ID, &st.Pipeline, &st.Session, &st.CallerKey, &st.Tool, &st.SchemaDigest, &st.SubjectSHA256, &st.Approver, &st.Request, &st.ExpiresAt, &usedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found, st.Used = true, usedAt != nil
		switch {
		case !st.Usable(now):
			_, err = tx.Exec(ctx, "DELETE FROM gatehost_approvals WHERE id = $1", id)
		case !st.Used:
			_, err = tx.Exec(ctx, "UPDATE gatehost_approvals SET used_at = $2 WHERE id = $1", id, now)
		}
		return err
	})
	if err != nil {
		return approval.Stored{}, false, approvalErr(err)
	}
	st.ExpiresAt = st.ExpiresAt.UTC()
	return st, found, nil
}
