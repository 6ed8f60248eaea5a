// Package store says what gatehost's front ends (gatehost serve, gatehost
// mcp, the CLI) and its composition root (package compose) need from the
// backend that keeps a process's durable state: the sessions, the event
// log decisions are appended to, the catalog a fleet publishes, the MCP
// gateway's trust baseline, approvals, and the backend's health.
//
// Two backends implement Store: store/file, over the files of one machine
// (event_log.path, sessions.path, the baseline lock file), and
// store/postgres, the PostgreSQL store that the replicas of a fleet share
// (docs/FLEET.md). Whether the state is shared with other replicas is a
// property of the backend (Shared), not something a caller infers from
// the concrete type. compose.OpenStore opens the one a config describes;
// package config only decodes the description and opens nothing.
package store

import (
	"context"
	"errors"
	"io"
	"regexp"
	"time"

	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/counter"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
)

// ErrNotShared is wrapped by the errors of the operations only a shared
// store has (publishing a catalog to replicas, reading the published one,
// the fleet's approvals), returned by a store that is not shared.
var ErrNotShared = errors.New("store: not a shared store")

// MaxNodeIDBytes caps a node id.
const MaxNodeIDBytes = 64

var nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ValidNodeID reports whether id can name a replica of a shared store
// (store.node_id) and its event log chain: 1 to MaxNodeIDBytes bytes of
// [A-Za-z0-9_.-].
func ValidNodeID(id string) bool { return nodeIDPattern.MatchString(id) }

// Store is an open backend. Its methods are safe for concurrent use; a
// failure of the backend itself (the database unreachable, slow or
// read-only) is returned as the backend's own error (for PostgreSQL one
// wrapping postgres.ErrUnavailable), never as a made-up answer.
type Store interface {
	// Shared reports whether other processes (the replicas of a fleet)
	// read and write the same state: true for PostgreSQL, false for
	// files. With a shared store a process takes its sessions and, when
	// store.catalog is published, its catalog from the store.
	Shared() bool

	// Sessions returns the session store: nil for files without
	// sessions.path (the caller then keeps sessions in memory).
	Sessions() session.Store

	// EventLog returns this process's writer of the event log (the file
	// log, or its chain of the database's log); nil when the store was
	// opened without one (files without event_log.path, or a read-only
	// opening).
	EventLog() eventlog.Appender

	// PublishCatalog stores snap as the catalog the replicas with
	// store.catalog: published decide against and returns its digest
	// (catalog.Snapshot.Digest: 64 lowercase hex digits). A store
	// that is not shared returns an error wrapping ErrNotShared.
	PublishCatalog(ctx context.Context, snap *catalog.Snapshot) (digest string, err error)
	// PublishedCatalog returns the catalog last published and its digest,
	// verified against the digest. A store that is not shared returns an
	// error wrapping ErrNotShared; PostgreSQL's errors are those of
	// postgres.DB.PublishedCatalog (ErrNoCatalog when none was published).
	PublishedCatalog(ctx context.Context) (digest string, tools []catalog.Tool, err error)
	// WatchCatalog calls fn with each catalog newly published, polling
	// every interval (0 is the backend's default), until ctx is done. A
	// store that is not shared has nothing to watch and returns at once.
	WatchCatalog(ctx context.Context, interval time.Duration, fn func(digest string, tools []catalog.Tool))

	// Healthy reports whether the store can record a decision now: the
	// outcome of its last operation or probe, and the error of the last
	// failure when it cannot. Files are always healthy (a file that cannot
	// be written fails the append itself).
	Healthy() (ok bool, lastErr error)
	// Monitor probes the store until ctx is done: every interval while it
	// answers, backing off up to maxBackoff while it does not, so Healthy
	// recovers without a request failing first. A store with nothing to
	// probe returns at once.
	Monitor(ctx context.Context, interval, maxBackoff time.Duration)

	// Baseline returns the MCP gateway's tool trust baseline: the fleet's
	// for PostgreSQL; for files the lock file the store was opened with
	// (shared by the processes of a machine through flock), or memory
	// without one. It is opened on each call and the caller owns it:
	// close it when it is an io.Closer. Errors are baseline's (ErrStore,
	// ErrInvalid).
	Baseline() (baseline.Store, error)
	// Approvals returns the approvals the store keeps for every replica
	// (approvals.store: postgres). A store that is not shared returns an
	// error wrapping ErrNotShared: approvals.store memory and file are
	// chosen by the config, whatever the store.
	Approvals() (approval.Store, error)

	// Close closes the event log and the store. Safe to call twice.
	Close() error
}

// Counting is the optional capability of a store that keeps the counts of
// the tool calls the host accepted (host.Config.Counters; the counters
// capability and the policy gate's context.session read them). Both
// backends have it: for files the counts are in the memory of the process
// (they do not outlive it and are not shared), for PostgreSQL in the
// database, shared by the replicas so a rate limit holds across them.
type Counting interface {
	// Counters returns the store's counts; its errors wrap
	// counter.ErrStore.
	Counters() counter.Store
}

// ChainReader is the optional capability of a store that keeps several
// event log chains (PostgreSQL): a file event log is checked and copied as
// a file (eventlog.Verify) instead.
type ChainReader interface {
	// VerifyChains verifies the chains opts names (default every chain),
	// each as eventlog.Verify does a file, and returns a report per chain
	// in name order. A broken chain is reported in its ChainReport.Err;
	// the error is for a chain that could not be read at all, or bad
	// options, and comes with the reports of the chains verified before.
	VerifyChains(ctx context.Context, opts VerifyChainsOptions) ([]ChainReport, error)
	// ExportChain writes chain's lines, each ending in "\n", to w (the
	// content of a file log) up to its head, which it returns.
	ExportChain(ctx context.Context, chain string, w io.Writer) (eventlog.Head, error)
}

// ChainReport is the verification of one chain.
type ChainReport struct {
	Chain string
	// Report is what verified, as eventlog.VerifyLines reports it.
	eventlog.Report
	// Head is the chain's head row; the zero Head if it has none.
	Head eventlog.Head
	// Gaps lists the missing seq ranges (at most 100) when the chain
	// broke with eventlog.ReasonSeqGap.
	Gaps []Gap
	// Err is nil when the chain holds, a *eventlog.ChainError when it
	// is broken.
	Err error
}

// Gap is a run of missing seqs, From to To inclusive.
type Gap struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// VerifyChainsOptions tunes VerifyChains; the zero value verifies every
// chain.
type VerifyChainsOptions struct {
	// Chains, if set, are the chains to verify; a chain named that does
	// not exist fails (for PostgreSQL with postgres.ReasonChainNotFound).
	Chains []string
	// Anchors maps a chain to a record hash kept outside the store's
	// reach (eventlog.VerifyOptions.Anchor): that chain fails unless a
	// record on it has that hash. An anchor for a chain not verified is an
	// error.
	Anchors map[string]string
}
