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

func TestReplaceOptions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "head")

	// A fixed temporary name, reused after a crash left it behind.
	require.NoError(t, os.WriteFile(path+".tmp", []byte("left by a crash, longer"), 0o600))
	r := safefile.Replace{TempSuffix: ".tmp"}
	require.NoError(t, r.WriteFile(path, []byte("one"), 0o640))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "one", string(data))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o640), fi.Mode().Perm())
	_, err = os.Stat(path + ".tmp")
	assert.ErrorIs(t, err, fs.ErrNotExist, "renamed away")

	// A file of another kind at the fixed name is refused, not opened.
	require.NoError(t, syscall.Mkfifo(path+".tmp", 0o644))
	err = r.WriteFile(path, []byte("two"), 0o640)
	assert.ErrorIs(t, err, safefile.ErrNotRegular)
	assert.Contains(t, err.Error(), path+".tmp")
	require.NoError(t, os.Remove(path+".tmp"))

	// An open directory is used and left open; NoSync still replaces.
	d, err := safefile.OpenDir(dir)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, safefile.Replace{Dir: d, NoSync: true}.WriteFile(path, []byte("three"), 0o600))
	require.NoError(t, safefile.Replace{Dir: d}.WriteFile(path, []byte("four"), 0o600))
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "four", string(data))
	_, err = d.Stat()
	assert.NoError(t, err, "the caller's directory is not closed")
	require.NoError(t, safefile.SyncDir(d))
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, names, 1, "no temporary file left")
}
