//go:build unix

package sqlsource_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
