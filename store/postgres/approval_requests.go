package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehost/gatehost/approval"
)

// Requests (table gatehost_approval_requests): the calls waiting for a
// person, shared by every replica. Each method is one transaction; the
// rule is package approval's (Request.SameCall, Request.Apply, Request.Use) applied
// under the requests' advisory lock (open) or the row's lock (update),
// so that one binding has one open request and a request is decided once
// across replicas.

// requestsLock is the advisory lock key of an open.
const requestsLock int64 = 0x6761746572717331 // "gaterqs1"

func (s approvalStore) OpenRequest(ctx context.Context, r approval.Request, now time.Time, max int) (approval.Request, bool, error) {
	if err := r.Check(); err != nil {
		return approval.Request{}, false, err
	}
	if r.State != approval.StatePending {
		return approval.Request{}, false, fmt.Errorf("approval: request %s: opened %s", r.ID, r.State)
	}
	doc, err := json.Marshal(r)
	if err != nil {
		return approval.Request{}, false, approvalErr(err)
	}
	key := r.Binding.Key()
	got, created := r, true
	err = s.db.Tx(ctx, "approval_request_open", func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", requestsLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM gatehost_approval_requests WHERE expires_at <= $1", now); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT doc FROM gatehost_approval_requests WHERE binding_key = $1", key)
		if err != nil {
			return err
		}
		olds, err := scanRequests(rows)
		if err != nil {
			return err
		}
		for _, o := range olds {
			if o.SameCall(r.Binding, now) {
				got, created = o, false
				return nil
			}
		}
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM gatehost_approval_requests").Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return Passthrough(approval.ErrFull)
		}
		// The caller's share: the binding's caller_key in doc (no column of
		// its own; the table holds at most max rows).
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM gatehost_approval_requests WHERE coalesce(doc->>'caller_key', '') = $1",
			r.CallerKey).Scan(&n); err != nil {
			return err
		}
		if err := approval.CheckShare(n, max); err != nil {
			return Passthrough(err)
		}
		_, err = tx.Exec(ctx, `INSERT INTO gatehost_approval_requests (id, binding_key, state, created_at, expires_at, doc)
			VALUES ($1, $2, $3, $4, $5, $6)`, r.ID, key, r.State, r.CreatedAt, r.ExpiresAt, doc)
		return err
	})
	if err != nil {
		return approval.Request{}, false, approvalErr(err)
	}
	return got, created, nil
}

func (s approvalStore) Request(ctx context.Context, id string, now time.Time) (approval.Request, error) {
	var r approval.Request
	err := s.db.Tx(ctx, "approval_request_get", func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT doc FROM gatehost_approval_requests WHERE id = $1 AND expires_at > $2", id, now)
		if err != nil {
			return err
		}
		rs, err := scanRequests(rows)
		if err != nil {
			return err
		}
		if len(rs) == 0 {
			return Passthrough(fmt.Errorf("%w: %s", approval.ErrNoRequest, id))
		}
		r = rs[0]
		return nil
	})
	return r, approvalErr(err)
}

func (s approvalStore) Requests(ctx context.Context, now time.Time) ([]approval.Request, error) {
	var out []approval.Request
	err := s.db.Tx(ctx, "approval_request_list", func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT doc FROM gatehost_approval_requests WHERE expires_at > $1", now)
		if err != nil {
			return err
		}
		out, err = scanRequests(rows)
		return err
	})
	if err != nil {
		return nil, approvalErr(err)
	}
	approval.SortRequests(out)
	return out, nil
}

func (s approvalStore) UpdateRequest(ctx context.Context, id string, now time.Time, change func(approval.Request) (approval.Request, error)) (approval.Request, error) {
	var r approval.Request
	err := s.db.Tx(ctx, "approval_request_update", func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT doc FROM gatehost_approval_requests WHERE id = $1 FOR UPDATE", id)
		if err != nil {
			return err
		}
		rs, err := scanRequests(rows)
		if err != nil {
			return err
		}
		if len(rs) == 0 {
			return Passthrough(fmt.Errorf("%w: %s", approval.ErrNoRequest, id))
		}
		if r, err = change(rs[0]); err != nil {
			return Passthrough(err)
		}
		if err := r.Check(); err != nil {
			return Passthrough(err)
		}
		doc, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE gatehost_approval_requests SET state = $2, expires_at = $3, doc = $4 WHERE id = $1",
			id, r.State, r.ExpiresAt, doc)
		return err
	})
	return r, approvalErr(err)
}

// scanRequests reads rows of doc, each checked as a store's untrusted
// content: a row that is not a valid request fails the operation.
func scanRequests(rows pgx.Rows) ([]approval.Request, error) {
	defer rows.Close()
	var out []approval.Request
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, err
		}
		var r approval.Request
		if err := json.Unmarshal(doc, &r); err != nil {
			return nil, fmt.Errorf("approval request row: %w", err)
		}
		if err := r.Check(); err != nil {
			return nil, fmt.Errorf("approval request row: %w", err)
		}
		r.CreatedAt, r.ExpiresAt = r.CreatedAt.UTC(), r.ExpiresAt.UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
