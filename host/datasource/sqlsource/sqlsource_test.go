package sqlsource_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/host/datasource/sqlsource"
)

func TestSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE orders (order_id TEXT PRIMARY KEY, status TEXT, n INTEGER, note TEXT);
		INSERT INTO orders VALUES ('#1', 'pending', 2, NULL), ('#2', 'delivered', 1, 'x');`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s, err := sqlsource.OpenSQLite(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	v := &datasource.View{Name: "v", Params: []string{"id"}, SQL: "SELECT status, n, note FROM orders WHERE order_id = :id"}
	require.NoError(t, s.Prepare(ctx, v))
	rows, err := s.Rows(ctx, v, map[string]any{"id": "#1"})
	require.NoError(t, err)
	assert.Equal(t, []datasource.Row{{"status": "pending", "n": int64(2)}}, rows, "NULL is an absent field")
	rows, err = s.Rows(ctx, v, map[string]any{"id": "#9"})
	require.NoError(t, err)
	assert.Empty(t, rows)

	_, err = s.Rows(ctx, v, map[string]any{})
	assert.ErrorIs(t, err, datasource.ErrUnbound)
	_, err = s.Rows(ctx, v, map[string]any{"id": map[string]any{}})
	assert.ErrorContains(t, err, "SQL binds take a string, number or boolean")

	for _, bad := range []datasource.View{
		{Name: "b1", Params: []string{"id"}, SQL: "SELECT 1"},
		{Name: "b2", SQL: "SELECT 1 WHERE :id = 1"},
		{Name: "b3", Params: []string{"id"}, SQL: "SELEKT :id"},
		{Name: "b4", Params: []string{"id"}, Document: &datasource.DocumentView{Collection: "orders"}},
	} {
		assert.Error(t, s.Prepare(ctx, &bad), bad.Name)
	}
	// Read-only: a gate reads application state, never writes it.
	w := &datasource.View{Name: "w", SQL: "UPDATE orders SET status = 'cancelled' RETURNING status"}
	_, err = s.Rows(ctx, w, map[string]any{})
	assert.Error(t, err)
}

// TestCollections: the tables and views, sorted, SQLite's own
// (sqlite_sequence, made by AUTOINCREMENT) left out; closed, the source
// lists none.
func TestCollections(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE users (user_id TEXT PRIMARY KEY);
		CREATE TABLE order_payments (order_id TEXT, seq INTEGER);
		CREATE TABLE "Orders" (n INTEGER PRIMARY KEY AUTOINCREMENT);
		INSERT INTO "Orders" DEFAULT VALUES;
		CREATE VIEW pending AS SELECT * FROM users;
		CREATE INDEX users_idx ON users (user_id);`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s, err := sqlsource.OpenSQLite(ctx, path)
	require.NoError(t, err)
	var lister interface{ Collections() []string } = s
	assert.Equal(t, []string{"Orders", "order_payments", "pending", "users"}, lister.Collections())
	tables, err := s.Tables(ctx)
	require.NoError(t, err)
	assert.Equal(t, lister.Collections(), tables)

	require.NoError(t, s.Close())
	assert.Nil(t, s.Collections())
	_, err = s.Tables(ctx)
	assert.ErrorContains(t, err, "listing tables")
}
