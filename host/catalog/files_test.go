//go:build unix

package catalog_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/safefile/safefiletest"
)

// TestLoadRefusesSpecialFiles: a catalog path, or a *.json entry of a
// catalog directory, that is a named pipe or a device is refused at once
// with ErrNotRegular naming it; one over MaxFileBytes with ErrTooLarge.
func TestLoadRefusesSpecialFiles(t *testing.T) {
	fx := safefiletest.New(t)
	cases := append(fx.NotFiles()[:3], fx.OverCap(t, "big.json", catalog.MaxFileBytes))
	for _, c := range cases {
		t.Run("file/"+c.Name, func(t *testing.T) {
			err := safefiletest.Returns(t, func() error { _, err := catalog.Load(c.Path, catalog.ImportOptions{}); return err })
			require.ErrorIs(t, err, c.Want)
			var e *catalog.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, c.Path, e.File)
			assert.Equal(t, "catalog: "+c.Path+": "+c.Reason, err.Error())
		})
		// The same file as an entry of a catalog directory.
		t.Run("entry/"+c.Name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"name":"get_me"}`), 0o644))
			entry := filepath.Join(dir, "b.json")
			require.NoError(t, os.Symlink(c.Path, entry))
			err := safefiletest.Returns(t, func() error { _, err := catalog.Load(dir, catalog.ImportOptions{}); return err })
			require.ErrorIs(t, err, c.Want)
			assert.Equal(t, "catalog: "+entry+": "+c.Reason, err.Error())
		})
	}
	t.Run("entry is a named pipe itself", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "a.json"), 0o644))
		err := safefiletest.Returns(t, func() error { _, err := catalog.Load(dir, catalog.ImportOptions{}); return err })
		require.ErrorIs(t, err, catalog.ErrNotRegular)
	})
	t.Run("sentinels are the host's", func(t *testing.T) {
		assert.Equal(t, "file too large", catalog.ErrTooLarge.Error())
		assert.Equal(t, "not a regular file", catalog.ErrNotRegular.Error())
	})
}
