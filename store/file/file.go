// Package file is the store.Store of one machine: the event log file
// (host/eventlog), the session file (host/session's FileStore) and the MCP
// gateway's baseline lock file (mcpgateway/baseline), each shared by the
// gatehost processes of the machine through its own locking, and by no
// other replica. The catalog is each process's own (catalog.sources): a
// file store publishes none.
package file

import (
	"context"
	"fmt"
	"time"

	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/counter"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
	"github.com/gatehost/gatehost/store"
)

var (
	_ store.Store    = (*Store)(nil)
	_ store.Counting = (*Store)(nil)
)

// Options say which files Open uses; each may be absent.
type Options struct {
	// EventLogPath is the event log file (event_log.path); "" opens no
	// log (EventLog is then nil).
	EventLogPath string
	// EventLog tunes the log (eventlog.Open's options).
	EventLog eventlog.Options
	// Sessions is the session store kept in sessions.path
	// (session.NewFileStore), or nil: the caller keeps sessions in memory.
	// It is taken as it is, so that a process has one FileStore per file.
	Sessions session.Store
	// BaselinePath is the MCP gateway's baseline lock file; "" keeps the
	// baseline in memory.
	BaselinePath string
	// CounterRetain is how long the counts keep a call: the longest
	// counters window the host counts over (0: none, only each session's
	// totals are kept).
	CounterRetain time.Duration
}

// Store is the file store.
type Store struct {
	log          *eventlog.Log
	sessions     session.Store
	baselinePath string
	counters     *counter.MemStore
	closed       bool
}

// Open opens the event log file, if any (eventlog.Open: the file is
// created if absent, its chain checked), and returns the store. Errors are
// eventlog.Open's.
func Open(o Options) (*Store, error) {
	s := &Store{sessions: o.Sessions, baselinePath: o.BaselinePath, counters: counter.NewMemStore(o.CounterRetain)}
	if o.EventLogPath != "" {
		log, err := eventlog.Open(o.EventLogPath, o.EventLog)
		if err != nil {
			return nil, err
		}
		s.log = log
	}
	return s, nil
}

// Counters returns the counts of the calls this process accepted, kept in
// its memory (counter.MemStore): files keep no counts, and a rate limit
// holds for one process only.
func (s *Store) Counters() counter.Store { return s.counters }

// Shared is false: only the processes of this machine see the files.
func (s *Store) Shared() bool { return false }

// Sessions returns Options.Sessions.
func (s *Store) Sessions() session.Store { return s.sessions }

// EventLog returns the log file's writer; nil without Options.EventLogPath.
func (s *Store) EventLog() eventlog.Appender {
	if s.log == nil {
		return nil
	}
	return s.log
}

// PublishCatalog refuses: no other replica reads a file store.
func (s *Store) PublishCatalog(context.Context, *catalog.Snapshot) (string, error) {
	return "", fmt.Errorf("%w: publishing a catalog needs a PostgreSQL store", store.ErrNotShared)
}

// PublishedCatalog refuses: a file store holds no published catalog.
func (s *Store) PublishedCatalog(context.Context) (string, []catalog.Tool, error) {
	return "", nil, fmt.Errorf("%w: a published catalog is read from a PostgreSQL store", store.ErrNotShared)
}

// WatchCatalog returns at once: nothing is ever published to files.
func (s *Store) WatchCatalog(context.Context, time.Duration, func(string, []catalog.Tool)) {}

// Healthy is always true: a file that cannot be written fails the append.
func (s *Store) Healthy() (bool, error) { return true, nil }

// Monitor returns at once: there is nothing to probe.
func (s *Store) Monitor(context.Context, time.Duration, time.Duration) {}

// Baseline opens the baseline lock file (baseline.OpenFile), or returns a
// memory baseline without Options.BaselinePath.
func (s *Store) Baseline() (baseline.Store, error) {
	if s.baselinePath == "" {
		return baseline.NewMemory(), nil
	}
	f, err := baseline.OpenFile(s.baselinePath)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Approvals refuses: approvals shared by a fleet need a shared store.
func (s *Store) Approvals() (approval.Store, error) {
	return nil, fmt.Errorf("%w: approvals shared by replicas need a PostgreSQL store", store.ErrNotShared)
}

// Close closes the event log. Safe to call twice.
func (s *Store) Close() error {
	if s == nil || s.closed {
		return nil
	}
	s.closed = true
	if s.log == nil {
		return nil
	}
	return s.log.Close()
}
