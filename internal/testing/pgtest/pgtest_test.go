package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/pgtest"
)

// TestClusterRestart starts a real server, writes a row, restarts the
// server and reads the row back: what the store tests rely on.
func TestClusterRestart(t *testing.T) {
	c := pgtest.Start(t)
	dsn := c.NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE t (v int); INSERT INTO t VALUES (42)")
	require.NoError(t, err)
	conn.Close(ctx)

	require.NoError(t, c.Restart())
	conn, err = pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var v int
	require.NoError(t, conn.QueryRow(ctx, "SELECT v FROM t").Scan(&v))
	require.Equal(t, 42, v)

	require.NoError(t, c.Stop())
	_, err = pgx.Connect(ctx, dsn)
	require.Error(t, err, "a stopped server refuses connections")
}
