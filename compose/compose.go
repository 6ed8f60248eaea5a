// Package compose is gatehost's composition root: it turns a loaded config
// into what a process runs with — the store (event log, sessions, and with
// a PostgreSQL store the fleet's catalog), the tracer, the decision-log
// export, and the host.Config that uses them — in one place, and closes
// them in order. Every front end (gatehost check, merge-verify, mcp,
// serve) and an embedder go through Open, so a feature wired here reaches
// them all.
package compose

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/store"
)

// Options tune Open; zero fields are fine.
type Options struct {
	// Logger receives what the parts log; default slog.Default().
	Logger *slog.Logger
	// Version is the service.version of traces.
	Version string
	// Backend tunes the store (metrics hooks); its Logger and Access are
	// Open's own.
	Backend StoreOptions
	// ExportDecisions starts the decision_log: section's exporters and
	// tees the event log to them: for processes that live (serve, mcp),
	// not for a one-shot check, whose records the next exporter to start
	// reads from the log.
	ExportDecisions bool
}

// Runtime is a config opened for a process. Host is ready for host.New
// (or an embedder's own use); the caller closes the host before Close,
// and the config after it (the config stays the caller's: a server hands
// it on to the host it builds).
type Runtime struct {
	// Config is the loaded config.
	Config *config.Loaded
	// Store is the store opened: store/file (its event log only with
	// event_log.path) or store/postgres.
	Store store.Store
	// Tracer exports the host's spans; nil is tracing off.
	Tracer *Tracer
	// DecisionLogs are the running exporters; nil is none.
	DecisionLogs *DecisionLogs

	logger *slog.Logger
	closed bool
}

// Host is the host config of the runtime: the config's, pointed at the
// runtime's event log (teed to the exporters), sessions, catalog and
// tracer.
func (r *Runtime) Host() host.Config { return r.Config.Host }

// Open opens what l describes, in order: the tracer, the store (the file
// event log, or the PostgreSQL store with its chain and sessions and the
// catalog store.catalog names), then the decision-log export. On error
// what was opened is closed; l is never closed by the runtime. Errors
// name the config file and key.
func Open(ctx context.Context, l *config.Loaded, o Options) (*Runtime, error) {
	r := &Runtime{Config: l, logger: cmp.Or(o.Logger, slog.Default())}
	l.Host.Logger = r.logger
	var err error
	fail := func(e error) (*Runtime, error) {
		r.closeParts()
		return nil, e
	}
	if r.Tracer, err = NewTracer(ctx, l.Tracing, o.Version, r.logger); err != nil {
		return fail(fmt.Errorf("config %s: %w", l.File, err))
	}
	l.Host.TracerProvider = r.Tracer.Provider()
	so := o.Backend
	so.Logger, so.Access = r.logger, Serve
	if r.Store, err = OpenStore(ctx, l, so); err != nil {
		return fail(fmt.Errorf("config %s: %w", l.File, err))
	}
	if err := adopt(ctx, l, r.Store); err != nil {
		return fail(err)
	}
	if o.ExportDecisions {
		if r.DecisionLogs, err = OpenDecisionLogs(l, r.logger); err != nil {
			return fail(err)
		}
		if l.Host.EventLog != nil {
			l.Host.EventLog = r.DecisionLogs.Tee(l.Host.EventLog)
		}
	}
	return r, nil
}

// adopt makes l.Host append to st's event log (none without one) and,
// with a shared store, read st's sessions and decide against the catalog
// the store's config names (CatalogTools).
func adopt(ctx context.Context, l *config.Loaded, st store.Store) error {
	l.Host.EventLogPath, l.Host.EventLog = "", st.EventLog()
	if c, ok := st.(store.Counting); ok {
		// The store's counts outlive a reload: a rate limit does not
		// start over when the config changes.
		l.Host.Counters = c.Counters()
	}
	if !st.Shared() {
		return nil
	}
	l.Host.Sessions = st.Sessions()
	tools, _, err := CatalogTools(ctx, l, st)
	if err != nil {
		return err
	}
	if l.Host.Catalog, err = catalog.NewStore(tools...); err != nil {
		return fmt.Errorf("config %s: catalog: %w", l.File, err)
	}
	return nil
}

// Close closes the parts in the reverse order of Open — the exporters
// (sending what they hold for at most 5s), the store, the tracer (flushing
// its spans within tracing.timeout). Call it after the host is closed.
// Safe to call twice.
func (r *Runtime) Close() error {
	if r == nil || r.closed {
		return nil
	}
	return r.closeParts()
}

func (r *Runtime) closeParts() error {
	r.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.DecisionLogs.Close(ctx)
	if r.Store != nil {
		err = errors.Join(err, r.Store.Close())
	}
	if terr := r.Tracer.Shutdown(context.Background()); terr != nil {
		r.logger.Warn("tracing: spans dropped at exit", "err", terr)
	}
	return err
}
