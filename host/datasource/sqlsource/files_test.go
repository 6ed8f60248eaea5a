//go:build unix

package sqlsource_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/host/datasource/sqlsource"
	"github.com/gatehost/gatehost/internal/safefile/safefiletest"
)

// TestOpenSQLiteRefusesSpecialFiles: a database path naming a named pipe, a
// device or a directory is refused before SQLite opens it.
func TestOpenSQLiteRefusesSpecialFiles(t *testing.T) {
	fx := safefiletest.New(t)
	for _, c := range fx.NotFiles() {
		t.Run(c.Name, func(t *testing.T) {
			err := safefiletest.Returns(t, func() error {
				s, err := sqlsource.OpenSQLite(context.Background(), c.Path)
				if err == nil {
					s.Close()
				}
				return err
			})
			require.ErrorIs(t, err, c.Want)
			assert.Equal(t, "datasource: sqlite: "+c.Path+": "+c.Reason, err.Error())
		})
	}
}

// TestOpenSQLiteNameIsAPath: '?', '#' and '%' in the file name are part of
// the name; they cannot add URI parameters such as mode=rw.
func TestOpenSQLiteNameIsAPath(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.db")
	db, err := sql.Open("sqlite", plain)
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE t (id TEXT PRIMARY KEY, v TEXT); INSERT INTO t VALUES ('1', 'x');`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	path := filepath.Join(dir, "a%41#b?mode=rw&c.db")
	require.NoError(t, os.Rename(plain, path))

	s, err := sqlsource.OpenSQLite(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	v := &datasource.View{Name: "v", Params: []string{"id"}, SQL: "SELECT v FROM t WHERE id = :id"}
	require.NoError(t, s.Prepare(ctx, v))
	rows, err := s.Rows(ctx, v, map[string]any{"id": "1"})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "x", rows[0]["v"])
}
