//go:build unix

package safefile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/safefile"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	require.NoError(t, safefile.WriteFileAtomic(path, []byte("one"), 0o640))
	require.NoError(t, safefile.WriteFileAtomic(path, []byte("two"), 0o640))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "two", string(data))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o640), fi.Mode().Perm())
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, names, 1, "no temporary file left")

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	assert.ErrorIs(t, safefile.WriteFileAtomic(fifo, []byte("x"), 0o644), safefile.ErrNotRegular)

	err = safefile.WriteFileAtomic(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644)
	assert.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
}
