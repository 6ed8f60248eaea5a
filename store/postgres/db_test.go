package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/store/postgres"
)

// openDB opens a store on a new database of the shared cluster.
func openDB(t *testing.T, node string) (*postgres.DB, string) {
	t.Helper()
	dsn := pgtest.Shared(t).NewDatabase(t)
	db, err := postgres.Open(context.Background(), postgres.Options{DSN: dsn, NodeID: node})
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return db, dsn
}

func TestOpenMigratesOnceAcrossConcurrentReplicas(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	dbs := make([]*postgres.DB, 4)
	for i := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dbs[i], errs[i] = postgres.Open(ctx, postgres.Options{DSN: dsn, NodeID: fmt.Sprintf("node-%d", i)})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "replica %d", i)
		defer dbs[i].Close()
	}
	v, err := dbs[0].SchemaVersion(ctx)
	require.NoError(t, err)
	assert.Positive(t, v)
	var applied int
	require.NoError(t, dbs[0].Pool().QueryRow(ctx, "SELECT count(*) FROM gatehost_schema_migrations").Scan(&applied))
	assert.Equal(t, v, applied, "each migration applied exactly once")
	var nodes int
	require.NoError(t, dbs[0].Pool().QueryRow(ctx, "SELECT count(*) FROM gatehost_nodes").Scan(&nodes))
	assert.Equal(t, 4, nodes)

	// Opening again changes nothing.
	again, err := postgres.Open(ctx, postgres.Options{DSN: dsn, NodeID: "node-0"})
	require.NoError(t, err)
	defer again.Close()
	v2, err := again.SchemaVersion(ctx)
	require.NoError(t, err)
	assert.Equal(t, v, v2)
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	db, dsn := openDB(t, "a")
	ctx := context.Background()
	_, err := db.Pool().Exec(ctx, "INSERT INTO gatehost_schema_migrations (version, name) VALUES (9999, 'future')")
	require.NoError(t, err)
	_, err = postgres.Open(ctx, postgres.Options{DSN: dsn, NodeID: "b"})
	require.ErrorIs(t, err, postgres.ErrSchema)
	assert.Contains(t, err.Error(), "9999")
}

func TestOpenRefusals(t *testing.T) {
	pgtest.Skip(t)
	tests := []struct {
		name string
		opts postgres.Options
		want error
	}{
		{"bad node id", postgres.Options{DSN: "postgres://x@127.0.0.1:1/x", NodeID: "a b"}, postgres.ErrConfig},
		{"empty node id", postgres.Options{DSN: "postgres://x@127.0.0.1:1/x"}, postgres.ErrConfig},
		{"long node id", postgres.Options{DSN: "postgres://x@127.0.0.1:1/x", NodeID: string(make([]byte, 65))}, postgres.ErrConfig},
		{"bad dsn", postgres.Options{DSN: "postgres://user:s3cret@[::1", NodeID: "a"}, postgres.ErrConfig},
		{"negative timeout", postgres.Options{DSN: "postgres://x@127.0.0.1:1/x", NodeID: "a", OpTimeout: -1}, postgres.ErrConfig},
		{"unreachable", postgres.Options{DSN: "postgres://user:s3cret@127.0.0.1:1/x?connect_timeout=2", NodeID: "a", ConnectTimeout: 2 * time.Second}, postgres.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := postgres.Open(context.Background(), tt.opts)
			require.ErrorIs(t, err, tt.want)
			assert.NotContains(t, err.Error(), "s3cret", "errors never echo the DSN's password")
		})
	}
}

func TestOpPassthroughAndHealth(t *testing.T) {
	db, _ := openDB(t, "a")
	ctx := context.Background()
	mine := errors.New("refused by the caller")
	err := db.Op(ctx, "t", func(context.Context) error { return postgres.Passthrough(mine) })
	require.ErrorIs(t, err, mine)
	assert.NotErrorIs(t, err, postgres.ErrUnavailable)
	ok, _ := db.Healthy()
	assert.True(t, ok)

	err = db.Op(ctx, "t", func(ctx context.Context) error {
		_, err := db.Pool().Exec(ctx, "SELECT pg_sleep(10)")
		return err
	})
	require.ErrorIs(t, err, postgres.ErrUnavailable, "an operation past OpTimeout is unavailable")
	ok, last := db.Healthy()
	assert.False(t, ok)
	require.Error(t, last)
	require.NoError(t, db.Ping(ctx))
	ok, _ = db.Healthy()
	assert.True(t, ok, "a probe that succeeds restores health")
}

// TestOpCallerGoneKeepsHealth: an operation whose caller's context ends
// (a request cancelled, a process shutting down) fails for the caller but
// does not mark the database unavailable.
func TestOpCallerGoneKeepsHealth(t *testing.T) {
	db, _ := openDB(t, "a")
	require.NoError(t, db.Ping(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	err := db.Op(ctx, "t", func(opCtx context.Context) error {
		cancel()
		<-opCtx.Done()
		return opCtx.Err()
	})
	require.ErrorIs(t, err, postgres.ErrUnavailable, "the caller still gets an error")
	assert.ErrorIs(t, err, context.Canceled)
	ok, last := db.Healthy()
	assert.True(t, ok, "health stays as the database last answered: %v", last)
}

func TestPingRefusesReadOnly(t *testing.T) {
	db, dsn := openDB(t, "a")
	ctx := context.Background()
	_, err := db.Pool().Exec(ctx, "SELECT 1")
	require.NoError(t, err)
	ro, err := postgres.Open(ctx, postgres.Options{DSN: dsn + "&options=-c%20default_transaction_read_only%3Don", NodeID: "ro"})
	if err == nil {
		defer ro.Close()
		err = ro.Ping(ctx)
	}
	require.ErrorIs(t, err, postgres.ErrUnavailable, "a read-only server cannot record decisions")
	_ = db
}

// TestOpenReadOnly: a read-only opening writes nothing — no node row, no
// migration — and refuses, without migrating, a schema older or newer
// than this build's.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	empty := pgtest.Shared(t).NewDatabase(t)
	_, err := postgres.Open(ctx, postgres.Options{DSN: empty, NodeID: "auditor", ReadOnly: true})
	require.ErrorIs(t, err, postgres.ErrSchema)
	assert.Contains(t, err.Error(), "no gatehost schema")

	db, dsn := openDB(t, "writer")
	ro, err := postgres.Open(ctx, postgres.Options{DSN: dsn, NodeID: "auditor", ReadOnly: true})
	require.NoError(t, err)
	_, err = ro.Pool().Exec(ctx, "INSERT INTO gatehost_nodes (node_id) VALUES ('x')")
	require.Error(t, err, "every transaction of a read-only store is read-only")
	ro.Close()
	var nodes []string
	rows, err := db.Pool().Query(ctx, "SELECT node_id FROM gatehost_nodes")
	require.NoError(t, err)
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		nodes = append(nodes, n)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"writer"}, nodes, "a read-only opening registers no node")

	// An older schema: refused, not migrated.
	_, err = db.Pool().Exec(ctx, "DELETE FROM gatehost_schema_migrations WHERE version = (SELECT max(version) FROM gatehost_schema_migrations)")
	require.NoError(t, err)
	before, err := db.SchemaVersion(ctx)
	require.NoError(t, err)
	_, err = postgres.Open(ctx, postgres.Options{DSN: dsn, NodeID: "auditor", ReadOnly: true})
	require.ErrorIs(t, err, postgres.ErrSchema)
	assert.Contains(t, err.Error(), "older than this gatehost expects")
	after, err := db.SchemaVersion(ctx)
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing migrated")

	// A newer one: refused too.
	_, err = db.Pool().Exec(ctx, "INSERT INTO gatehost_schema_migrations (version, name) VALUES (9999, 'future')")
	require.NoError(t, err)
	_, err = postgres.Open(ctx, postgres.Options{DSN: dsn, NodeID: "auditor", ReadOnly: true})
	require.ErrorIs(t, err, postgres.ErrSchema)
	assert.Contains(t, err.Error(), "9999")
}
