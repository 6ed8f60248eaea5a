package postgres

import (
	"context"

	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
	"github.com/gatehost/gatehost/store"
)

// Both are implemented by Store: the shared store and its chains.
var (
	_ store.Store       = (*Store)(nil)
	_ store.ChainReader = (*Store)(nil)
	_ store.Counting    = (*Store)(nil)
)

// Store is a DB opened as a store.Store: the DB and, unless it was opened
// read-only, this process's chain of the event log.
type Store struct {
	*DB
	log      *Log
	sessions session.Store
	closed   bool
}

// NewStore returns db as a store.Store, with the event log chain named
// chain (a node id, or GlobalChain) opened for appending (DB.EventLog), or
// none with chain "" (a read-only opening, or a command that records
// nothing). Its errors are EventLog's. Close closes the log and db.
func NewStore(ctx context.Context, db *DB, chain string) (*Store, error) {
	s := &Store{DB: db, sessions: db.Sessions()}
	if chain == "" {
		return s, nil
	}
	var err error
	if s.log, err = db.EventLog(ctx, chain); err != nil {
		return nil, err
	}
	return s, nil
}

// Shared is true: every replica opening the database shares its state.
func (s *Store) Shared() bool { return true }

// Sessions returns the database's session store.
func (s *Store) Sessions() session.Store { return s.sessions }

// EventLog returns this process's chain; nil when opened read-only.
func (s *Store) EventLog() eventlog.Appender {
	if s.log == nil {
		return nil
	}
	return s.log
}

// Chain returns the chain EventLog appends to; "" when opened read-only.
func (s *Store) Chain() string {
	if s.log == nil {
		return ""
	}
	return s.log.Chain()
}

// Baseline returns the fleet's trust baseline (DB.Baseline).
func (s *Store) Baseline() (baseline.Store, error) { return s.DB.Baseline(), nil }

// Approvals returns the fleet's approvals (DB.Approvals).
func (s *Store) Approvals() (approval.Store, error) { return s.DB.Approvals(), nil }

// Close closes the event log, then the pool. Safe to call twice.
func (s *Store) Close() error {
	if s == nil || s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.log != nil {
		err = s.log.Close()
	}
	s.DB.Close()
	return err
}
