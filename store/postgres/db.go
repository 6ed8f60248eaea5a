// Package postgres keeps gatehost's shared state in PostgreSQL, so that
// several replicas decide against the same sessions, catalog snapshots and
// event log (docs/FLEET.md): a session.Store (Sessions), an event log with
// one hash chain per node or one global chain (EventLog), published
// catalog snapshots named by their content digest (Catalogs), and the MCP
// gateway's tool trust baseline (Baseline).
//
// Every operation runs under Options.OpTimeout. Any failure — the database
// unreachable, slow, read-only, or a constraint refused — is returned as an
// error wrapping ErrUnavailable, and the host turns it into an inconclusive
// decision: nothing is ever decided without its durable record.
//
// Open applies the embedded schema migrations (migrations/NNNN_name.sql,
// in order, each once, each in its own transaction) while holding a
// PostgreSQL advisory lock, so that replicas starting together migrate one
// at a time. With Options.ReadOnly it writes nothing: it only checks that
// the schema is the one this build expects, so that an auditor's
// read-only role or a hot standby can read and verify.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehost/gatehost/store"
)

// Defaults of Options' zero fields.
const (
	DefaultOpTimeout      = 2 * time.Second
	DefaultConnectTimeout = 5 * time.Second
	DefaultMaxConns       = 16
)

// MaxNodeIDBytes caps a node id (store.MaxNodeIDBytes).
const MaxNodeIDBytes = store.MaxNodeIDBytes

var (
	// ErrUnavailable wraps every failure of the database (unreachable,
	// timed out, read-only, refused); callers treat it as "no answer".
	ErrUnavailable = errors.New("pgstore: database unavailable")
	// ErrConfig: Options are invalid (a bad DSN, node id or timeout).
	ErrConfig = errors.New("pgstore: invalid options")
	// ErrSchema: the database holds a schema newer than this build knows,
	// or a migration failed.
	ErrSchema = errors.New("pgstore: schema")
)

// Options configure Open.
type Options struct {
	// DSN is a libpq connection string or URL (pgx.ParseConfig). It is
	// a secret: errors never echo it.
	DSN string
	// NodeID names this replica: its event log chain (with ChainPerNode)
	// and the publisher of what it writes. 1 to MaxNodeIDBytes bytes of
	// [A-Za-z0-9_.-]. Required.
	NodeID string
	// OpTimeout bounds each operation (one query or transaction),
	// including waiting for a connection; default DefaultOpTimeout.
	OpTimeout time.Duration
	// ConnectTimeout bounds Open's first connection and migrations;
	// default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// MaxConns caps the pool's connections; default DefaultMaxConns.
	MaxConns int32
	// Logger receives migration and health lines; default slog.Default().
	Logger *slog.Logger
	// ReadOnly opens the store for reading only (verifying or exporting
	// the event log, showing sessions): no migration, no node row, and
	// every transaction read-only, so a role granted only SELECT, or a
	// hot standby, suffices. A schema older or newer than this build's is
	// refused (ErrSchema) rather than migrated.
	ReadOnly bool
	// OnOp, if set, is called after every operation with its name, its
	// duration and its error (nil on success): for metrics. It must be
	// quick and must not call the DB.
	OnOp func(op string, took time.Duration, err error)
}

// DB is an open store. Its methods are safe for concurrent use.
type DB struct {
	pool   *pgxpool.Pool
	opts   Options
	logger *slog.Logger

	// healthy is the outcome of the last operation or probe; lastErr
	// the error that made it false.
	healthy atomic.Bool
	errMu   sync.Mutex
	lastErr error
}

// ValidNodeID reports whether id is a valid Options.NodeID
// (store.ValidNodeID).
func ValidNodeID(id string) bool { return store.ValidNodeID(id) }

// Open connects to the database, applies the migrations and returns the
// store. Errors wrap ErrConfig (bad options), ErrSchema (a newer schema
// or a failed migration) or ErrUnavailable (no connection within
// ConnectTimeout).
func Open(ctx context.Context, o Options) (*DB, error) {
	if o.OpTimeout == 0 {
		o.OpTimeout = DefaultOpTimeout
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.OpTimeout < 0 || o.ConnectTimeout < 0 || o.MaxConns < 0 {
		return nil, fmt.Errorf("%w: timeouts and max_conns must be positive", ErrConfig)
	}
	if !ValidNodeID(o.NodeID) {
		return nil, fmt.Errorf("%w: node_id %q: want 1 to %d bytes of [A-Za-z0-9_.-]", ErrConfig, o.NodeID, MaxNodeIDBytes)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	pc, err := pgxpool.ParseConfig(o.DSN)
	if err != nil {
		// pgx's message may quote the DSN, password and all.
		return nil, fmt.Errorf("%w: dsn: not a valid PostgreSQL connection string or URL", ErrConfig)
	}
	pc.MaxConns = o.MaxConns
	pc.ConnConfig.ConnectTimeout = o.ConnectTimeout
	if pc.ConnConfig.RuntimeParams == nil {
		pc.ConnConfig.RuntimeParams = map[string]string{}
	}
	pc.ConnConfig.RuntimeParams["application_name"] = "gatehost/" + o.NodeID
	if o.ReadOnly {
		// The server, not only this code, then refuses any write.
		pc.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	db := &DB{pool: pool, opts: o, logger: o.Logger}
	mctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout+time.Duration(len(migrationFiles()))*o.OpTimeout)
	defer cancel()
	if o.ReadOnly {
		if err := db.checkSchema(mctx); err != nil {
			pool.Close()
			return nil, err
		}
		db.healthy.Store(true)
		return db, nil
	}
	if err := db.migrate(mctx); err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := pool.Exec(mctx, `INSERT INTO gatehost_nodes (node_id) VALUES ($1)
		ON CONFLICT (node_id) DO UPDATE SET last_seen = now()`, o.NodeID); err != nil {
		pool.Close()
		return nil, fmt.Errorf("%w: register node: %w", ErrUnavailable, err)
	}
	db.healthy.Store(true)
	return db, nil
}

// Close closes the pool.
func (db *DB) Close() { db.pool.Close() }

// NodeID returns Options.NodeID.
func (db *DB) NodeID() string { return db.opts.NodeID }

// Pool returns the connection pool, for the store's own packages and
// tests.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Op runs fn under OpTimeout (and ctx), reports it to OnOp and health, and
// wraps any error in ErrUnavailable unless fn returned an error that
// already says what it is (one wrapping ErrUnavailable, or a caller's own
// error passed through with Passthrough).
func (db *DB) Op(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, db.opts.OpTimeout)
	defer cancel()
	start := time.Now()
	err := fn(ctx)
	var pass *passthrough
	switch {
	case err == nil:
		db.setHealth(nil)
	case errors.As(err, &pass):
		// The database answered; the caller refused. Healthy.
		db.setHealth(nil)
		err = pass.err
	default:
		if !errors.Is(err, ErrUnavailable) {
			err = fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
		}
		// A caller that went away (a request cancelled, a process
		// shutting down) says nothing about the database: the error is
		// still the caller's, but health stays as the last real answer.
		if caller.Err() == nil {
			db.setHealth(err)
		}
	}
	if db.opts.OnOp != nil {
		db.opts.OnOp(op, time.Since(start), err)
	}
	return err
}

// Tx runs fn in a transaction under Op: committed when fn returns nil,
// rolled back otherwise.
func (db *DB) Tx(ctx context.Context, op string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return db.Op(ctx, op, func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return fn(ctx, tx) })
	})
}

// querier is a pool or a transaction: what reads shared by both need.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

type passthrough struct{ err error }

func (p *passthrough) Error() string { return p.err.Error() }
func (p *passthrough) Unwrap() error { return p.err }

// Passthrough marks err, returned from an Op or Tx callback, as the
// caller's own (a refused session operation, say): Op returns it unwrapped
// and counts the database healthy.
func Passthrough(err error) error {
	if err == nil {
		return nil
	}
	return &passthrough{err}
}

func (db *DB) setHealth(err error) {
	if err == nil {
		if !db.healthy.Swap(true) {
			db.logger.Info("pgstore: database reachable again", "node", db.opts.NodeID)
		}
		return
	}
	db.errMu.Lock()
	db.lastErr = err
	db.errMu.Unlock()
	if db.healthy.Swap(false) {
		db.logger.Error("pgstore: database unavailable; decisions are inconclusive until it answers", "node", db.opts.NodeID, "err", err)
	}
}

// Healthy reports whether the last operation or probe succeeded, and the
// error of the last one that failed otherwise.
func (db *DB) Healthy() (bool, error) {
	if db.healthy.Load() {
		return true, nil
	}
	db.errMu.Lock()
	defer db.errMu.Unlock()
	return false, db.lastErr
}

// Ping probes the database with a write-capable round trip: it fails on a
// read-only server (a standby, or default_transaction_read_only), since
// such a server cannot record a decision.
func (db *DB) Ping(ctx context.Context) error {
	return db.Op(ctx, "ping", func(ctx context.Context) error {
		var ro string
		if err := db.pool.QueryRow(ctx, "SHOW transaction_read_only").Scan(&ro); err != nil {
			return err
		}
		if ro != "off" {
			return errors.New("the server is read-only")
		}
		return nil
	})
}

// Monitor probes the database until ctx is done: every interval while it
// answers, and with exponential backoff from interval up to maxBackoff
// while it does not, so Healthy (and /readyz) recover without a request
// having to fail first. pgxpool itself reconnects on demand.
func (db *DB) Monitor(ctx context.Context, interval, maxBackoff time.Duration) {
	wait := interval
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if db.Ping(ctx) == nil {
			wait = interval
		} else {
			wait = min(wait*2, maxBackoff)
		}
	}
}

//go:embed migrations/*.sql
var migrationsFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

var migrationName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

func migrationFiles() []migration {
	entries, err := fs.ReadDir(migrationsFS, "migrations")
	if err != nil {
		panic(err) // embedded at build time
	}
	var ms []migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			panic("pgstore: migration file name " + e.Name() + " is not NNNN_name.sql")
		}
		v, _ := strconv.Atoi(m[1])
		b, err := migrationsFS.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			panic(err)
		}
		ms = append(ms, migration{version: v, name: m[2], sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	return ms
}

// migrationLock is the advisory lock key every gatehost migrator takes.
const migrationLock int64 = 0x6761746568737431 // "gatehst1"

// migrate applies the embedded migrations not yet applied, one migrator at
// a time across replicas (a session-level advisory lock on one connection).
func (db *DB) migrate(ctx context.Context) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("%w: connect: %w", ErrUnavailable, err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return fmt.Errorf("%w: migration lock: %w", ErrUnavailable, err)
	}
	defer func() {
		// A fresh context: the lock must go even if ctx is done.
		uctx, cancel := context.WithTimeout(context.Background(), db.opts.OpTimeout)
		defer cancel()
		if _, err := conn.Exec(uctx, "SELECT pg_advisory_unlock($1)", migrationLock); err != nil {
			// Closing the connection releases it for certain.
			_ = conn.Conn().Close(uctx)
		}
	}()
	// Looked up first: CREATE TABLE IF NOT EXISTS fails on a read-only
	// server even when the table exists, and that is an outage to report
	// as unavailable, not a schema fault.
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('gatehost_schema_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return fmt.Errorf("%w: read schema: %w", ErrUnavailable, err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS gatehost_schema_migrations (
		version integer PRIMARY KEY,
		name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("%w: migrations table: %w", ErrSchema, err)
		}
	}
	// Each migration is applied unless its version is recorded: a gap
	// (a version added below the highest applied) is filled, not skipped.
	applied, err := appliedMigrations(ctx, conn)
	if err != nil {
		return err
	}
	for _, m := range migrationFiles() {
		if slices.Contains(applied, m.version) {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO gatehost_schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("%w: migration %04d_%s: %w", ErrSchema, m.version, m.name, err)
		}
		db.logger.Info("pgstore: applied schema migration", "version", m.version, "name", m.name)
	}
	return nil
}

// appliedMigrations reads the versions of the migrations applied, and
// refuses (ErrSchema) one this build does not know.
func appliedMigrations(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}) ([]int, error) {
	rows, err := q.Query(ctx, "SELECT version FROM gatehost_schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("%w: read schema version: %w", ErrUnavailable, err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("%w: read schema version: %w", ErrUnavailable, err)
	}
	known := map[int]bool{}
	for _, m := range migrationFiles() {
		known[m.version] = true
	}
	for _, v := range applied {
		if !known[v] {
			return nil, fmt.Errorf("%w: the database has schema migration %d, which this gatehost does not know: upgrade gatehost", ErrSchema, v)
		}
	}
	return applied, nil
}

// checkSchema is migrate's read-only counterpart: it refuses a database
// whose applied migrations are not exactly this build's, and writes
// nothing.
func (db *DB) checkSchema(ctx context.Context) error {
	var exists bool
	if err := db.pool.QueryRow(ctx, "SELECT to_regclass('gatehost_schema_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return fmt.Errorf("%w: read schema: %w", ErrUnavailable, err)
	}
	if !exists {
		return fmt.Errorf("%w: the database holds no gatehost schema; a read-only opening does not create it: start a replica (or a writing command) with a role that may migrate first", ErrSchema)
	}
	applied, err := appliedMigrations(ctx, db.pool)
	if err != nil {
		return err
	}
	for _, m := range migrationFiles() {
		if !slices.Contains(applied, m.version) {
			return fmt.Errorf("%w: the database's schema is older than this gatehost expects (migration %04d_%s not applied); a read-only opening does not migrate: start a replica of this version (or a writing command) with a role that may migrate first", ErrSchema, m.version, m.name)
		}
	}
	return nil
}

// SchemaVersion returns the highest migration applied.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := db.Op(ctx, "schema_version", func(ctx context.Context) error {
		return db.pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM gatehost_schema_migrations").Scan(&v)
	})
	return v, err
}
