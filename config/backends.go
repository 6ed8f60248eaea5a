package config

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/store/postgres"
)

// Backends are the open state a config's store: section names: where
// sessions live and the event log decisions are appended to. With files
// DB is nil; with PostgreSQL every replica opening the same store shares
// them (docs/FLEET.md).
type Backends struct {
	// DB is the PostgreSQL store, nil with store.kind file.
	DB *postgres.DB
	// Sessions is the session store; nil with files and no sessions.path
	// (the caller keeps sessions in memory).
	Sessions session.Store
	// EventLog is this process's writer of the event log (other processes
	// may append to the same file log).
	EventLog eventlog.Appender
	// Chain is the event log chain written: the node id or
	// postgres.GlobalChain; "" with files.
	Chain   string
	closeFn func() error
}

// BackendOptions tune OpenBackends; zero fields are fine.
type BackendOptions struct {
	// OnCommit receives the file log's group commits (eventlog.Options).
	OnCommit func(eventlog.Commit)
	// OnOp receives every PostgreSQL operation (postgres.Options.OnOp).
	OnOp func(op string, took time.Duration, err error)
}

// OpenBackends opens the event log and session store of l: event_log.path
// and sessions.path, or the PostgreSQL store (migrated, its chain opened).
// Close closes them. Errors name the config key.
func (l *Loaded) OpenBackends(ctx context.Context, logger *slog.Logger, o BackendOptions) (*Backends, error) {
	if !l.Store.Postgres() {
		log, err := eventlog.Open(l.LogPath, eventlog.Options{Logger: logger, OnCommit: o.OnCommit})
		if err != nil {
			return nil, fmt.Errorf("config %s: event_log.path: %w", l.File, err)
		}
		return &Backends{Sessions: l.Host.Sessions, EventLog: log, closeFn: log.Close}, nil
	}
	po := l.Store.Options(logger)
	po.OnOp = o.OnOp
	db, err := postgres.Open(ctx, po)
	if err != nil {
		return nil, fmt.Errorf("config %s: store: %w", l.File, err)
	}
	chain := l.Store.NodeID
	if l.Store.Chain == ChainGlobal {
		chain = postgres.GlobalChain
	}
	log, err := db.EventLog(ctx, chain)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("config %s: store: event log: %w", l.File, err)
	}
	b := &Backends{DB: db, Sessions: db.Sessions(), EventLog: log, Chain: chain}
	b.closeFn = func() error {
		var err error
		if c, ok := any(log).(io.Closer); ok {
			err = c.Close()
		}
		db.Close()
		return err
	}
	logger.Info("gatehost: shared state in PostgreSQL", "node", l.Store.NodeID, "chain", chain, "catalog", l.Store.Catalog)
	return b, nil
}

// Close closes the event log and the store. Safe on nil.
func (b *Backends) Close() error {
	if b == nil || b.closeFn == nil {
		return nil
	}
	f := b.closeFn
	b.closeFn = nil
	return f()
}

// CatalogTools returns the tools a host built from l decides against: the
// config's catalog, or with store.catalog: published the snapshot last
// published to the store — refused when none was or it cannot be read: a
// replica never decides against a catalog it was not given.
func (b *Backends) CatalogTools(ctx context.Context, l *Loaded) ([]catalog.Tool, string, error) {
	return l.CatalogTools(ctx, b.DB)
}

// CatalogTools returns the tools a host built from l decides against, and
// their digest, given the PostgreSQL store db opened from l.Store (nil
// with files): Backends.CatalogTools for a command that opened the store
// alone, such as gatehost session.
func (l *Loaded) CatalogTools(ctx context.Context, db *postgres.DB) ([]catalog.Tool, string, error) {
	if db == nil || l.Store.Catalog != CatalogPublished {
		snap := l.Host.Catalog.Snapshot()
		return snap.List(), snap.Digest(), nil
	}
	digest, tools, err := db.PublishedCatalog(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("config %s: store.catalog: %s: %w", l.File, CatalogPublished, err)
	}
	return tools, digest, nil
}
