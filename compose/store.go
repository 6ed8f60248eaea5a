package compose

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/store"
	"github.com/gatehost/gatehost/store/file"
	"github.com/gatehost/gatehost/store/postgres"
)

// DefaultBaselineFile is the MCP gateway's trust baseline file beside the
// session file (sessions.path) when mcp.baseline.path is not set.
const DefaultBaselineFile = "mcp-tools.lock.json"

// Access is what OpenStore opens the store for.
type Access int

const (
	// Serve opens everything, the event log included: for a process that
	// records decisions.
	Serve Access = iota
	// State opens the store for reading and writing its state (sessions,
	// the published catalog) without opening the event log: for a command
	// such as gatehost session or gatehost catalog publish.
	State
	// ReadOnly opens a PostgreSQL store for reading only (no migration, no
	// node row, read-only transactions: postgres.Options.ReadOnly), so
	// that a read-only role or a hot standby can verify, export and show;
	// files are opened as with State.
	ReadOnly
)

// StoreOptions tune OpenStore; zero fields are fine.
type StoreOptions struct {
	// Logger receives the store's lines; default slog.Default().
	Logger *slog.Logger
	// Access is Serve (the default), State or ReadOnly.
	Access Access
	// OnCommit receives the file log's group commits (eventlog.Options).
	OnCommit func(eventlog.Commit)
	// OnOp receives every PostgreSQL operation (postgres.Options.OnOp).
	OnOp func(op string, took time.Duration, err error)
}

// OpenStore opens the store l.Store describes: with store.kind file the
// event log file (event_log.path, with Serve), the session file
// (sessions.path) and the baseline lock file; with store.kind postgres
// the database (migrated unless ReadOnly) and, with Serve, this replica's
// event log chain (store.node_id, or postgres.GlobalChain with
// store.chain: global). The caller closes it. Errors name the key
// ("event_log.path: …", "store: …"), not the file; a PostgreSQL error
// wraps postgres.ErrConfig, ErrSchema or ErrUnavailable.
func OpenStore(ctx context.Context, l *config.Loaded, o StoreOptions) (store.Store, error) {
	logger := cmp.Or(o.Logger, slog.Default())
	if !l.Store.Postgres() {
		fo := file.Options{Sessions: l.Host.Sessions, BaselinePath: baselinePath(l), CounterRetain: maxDuration(l.Host.CounterWindows),
			EventLog: eventlog.Options{Logger: logger, OnCommit: o.OnCommit, HeadInterval: l.LogHeadInterval}}
		if o.Access == Serve {
			fo.EventLogPath = l.LogPath
		}
		st, err := file.Open(fo)
		if err != nil {
			return nil, fmt.Errorf("event_log.path: %w", err)
		}
		return st, nil
	}
	db, err := postgres.Open(ctx, postgres.Options{DSN: l.Store.DSN, NodeID: l.Store.NodeID, OpTimeout: l.Store.OpTimeout,
		MaxConns: l.Store.MaxConns, Logger: logger, ReadOnly: o.Access == ReadOnly, OnOp: o.OnOp})
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	chain := ""
	if o.Access == Serve {
		chain = l.Store.NodeID
		if l.Store.Chain == config.ChainGlobal {
			chain = postgres.GlobalChain
		}
	}
	st, err := postgres.NewStore(ctx, db, chain)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: event log: %w", err)
	}
	if o.Access == Serve {
		logger.Info("gatehost: shared state in PostgreSQL", "node", l.Store.NodeID, "chain", chain, "catalog", l.Store.Catalog)
	}
	return st, nil
}

// baselinePath is the file store's baseline lock file: mcp.baseline.path,
// or DefaultBaselineFile beside the session file; "" (memory) with
// neither.
func baselinePath(l *config.Loaded) string {
	if l.MCP.Baseline.Path != "" || l.SessionPath == "" {
		return l.MCP.Baseline.Path
	}
	return filepath.Join(filepath.Dir(l.SessionPath), DefaultBaselineFile)
}

// CatalogTools returns the tools a host built from l decides against, and
// their digest: the config's catalog, or with a shared store and
// store.catalog: published the snapshot last published to st — refused
// when none was or it cannot be read: a replica never decides against a
// catalog it was not given. st may be nil (no store open).
func CatalogTools(ctx context.Context, l *config.Loaded, st store.Store) ([]catalog.Tool, string, error) {
	if st == nil || !st.Shared() || l.Store.Catalog != config.CatalogPublished {
		snap := l.Host.Catalog.Snapshot()
		return snap.List(), snap.Digest(), nil
	}
	digest, tools, err := st.PublishedCatalog(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("config %s: store.catalog: %s: %w", l.File, config.CatalogPublished, err)
	}
	return tools, digest, nil
}

// OpenApprovals opens the approval store l.Approvals names: memory, the
// approvals file, or st's (approvals.store: postgres, which the config
// allows only with a shared store). Errors name the config key.
func OpenApprovals(l *config.Loaded, st store.Store) (approval.Store, error) {
	switch l.Approvals.Store {
	case config.ApprovalsFile:
		f, err := approval.OpenFile(l.Approvals.Path)
		if err != nil {
			return nil, fmt.Errorf("config %s: approvals.path: %w", l.File, err)
		}
		return f, nil
	case config.ApprovalsPostgres:
		if st == nil || !st.Shared() {
			return nil, fmt.Errorf("config %s: approvals.store: %s needs the PostgreSQL store open", l.File, config.ApprovalsPostgres)
		}
		a, err := st.Approvals()
		if err != nil {
			return nil, fmt.Errorf("config %s: approvals.store: %w", l.File, err)
		}
		return a, nil
	}
	return approval.NewMemory(), nil
}

// maxDuration is the longest of ds; 0 for none.
func maxDuration(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}
