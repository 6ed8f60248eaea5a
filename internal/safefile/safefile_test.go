//go:build unix

package safefile_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/safefile"
)

// fixture holds one file of each kind the package must tell apart.
type fixture struct {
	regular, big, fifo, dir, linkFIFO, linkRegular, linkDir, missing, zero string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	d := t.TempDir()
	f := fixture{
		regular:     filepath.Join(d, "regular"),
		big:         filepath.Join(d, "big"),
		fifo:        filepath.Join(d, "fifo"),
		dir:         filepath.Join(d, "dir"),
		linkFIFO:    filepath.Join(d, "link-to-fifo"),
		linkRegular: filepath.Join(d, "link-to-regular"),
		linkDir:     filepath.Join(d, "link-to-dir"),
		missing:     filepath.Join(d, "missing"),
		zero:        "/dev/zero",
	}
	require.NoError(t, os.WriteFile(f.regular, []byte("hello"), 0o644))
	require.NoError(t, os.WriteFile(f.big, make([]byte, 100), 0o644))
	require.NoError(t, syscall.Mkfifo(f.fifo, 0o644))
	require.NoError(t, os.Mkdir(f.dir, 0o755))
	require.NoError(t, os.Symlink(f.fifo, f.linkFIFO))
	require.NoError(t, os.Symlink(f.regular, f.linkRegular))
	require.NoError(t, os.Symlink(f.dir, f.linkDir))
	return f
}

// returns runs fn and fails the test if it has not returned after a long
// time. The bound is a safety net against a hung test binary, not the
// assertion: a refused file fails without ever waiting.
func returns[T any](t *testing.T, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	select {
	case v := <-done:
		return v
	case <-time.After(2 * time.Minute):
		t.Fatal("the call did not return: it blocked on the file")
		panic("unreachable")
	}
}

func TestRefusesWrongKinds(t *testing.T) {
	f := newFixture(t)
	type call func(path string) error
	read := func(max int64) call {
		return func(p string) error { _, err := safefile.ReadFile(p, max); return err }
	}
	open := func(p string) error {
		fh, err := safefile.Open(p)
		if err == nil {
			fh.Close()
		}
		return err
	}
	appendOpen := func(p string) error {
		fh, err := safefile.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o640)
		if err == nil {
			fh.Close()
		}
		return err
	}
	writeOpen := func(p string) error {
		fh, err := safefile.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
		if err == nil {
			fh.Close()
		}
		return err
	}
	readDir := func(p string) error { _, err := safefile.ReadDir(p); return err }
	openDir := func(p string) error {
		fh, err := safefile.OpenDir(p)
		if err == nil {
			fh.Close()
		}
		return err
	}
	calls := map[string]call{
		"ReadFile": read(1 << 20), "Open": open, "OpenFile append": appendOpen, "OpenFile write": writeOpen,
		"CheckRegular": safefile.CheckRegular,
	}
	dirCalls := map[string]call{"ReadDir": readDir, "OpenDir": openDir, "CheckDir": safefile.CheckDir}

	tests := []struct {
		name   string
		path   string
		want   error  // for file calls; nil: accepted
		kind   string // the detail named
		dirErr error  // for directory calls
	}{
		{name: "regular", path: f.regular, dirErr: safefile.ErrNotDir},
		{name: "symlink to regular", path: f.linkRegular, dirErr: safefile.ErrNotDir},
		{name: "named pipe", path: f.fifo, want: safefile.ErrNotRegular, kind: "named pipe", dirErr: safefile.ErrNotDir},
		{name: "symlink to named pipe", path: f.linkFIFO, want: safefile.ErrNotRegular, kind: "named pipe", dirErr: safefile.ErrNotDir},
		{name: "/dev/zero", path: f.zero, want: safefile.ErrNotRegular, kind: "character device", dirErr: safefile.ErrNotDir},
		{name: "directory", path: f.dir, want: safefile.ErrNotRegular, kind: "directory"},
		{name: "symlink to directory", path: f.linkDir, want: safefile.ErrNotRegular, kind: "directory"},
	}
	for _, tt := range tests {
		for name, fn := range calls {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				err := returns(t, func() error { return fn(tt.path) })
				if tt.want == nil {
					require.NoError(t, err)
					return
				}
				require.ErrorIs(t, err, tt.want)
				var e *safefile.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tt.path, e.Path)
				assert.Equal(t, tt.path+": not a regular file ("+tt.kind+")", err.Error())
			})
		}
		for name, fn := range dirCalls {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				err := returns(t, func() error { return fn(tt.path) })
				if tt.dirErr == nil {
					require.NoError(t, err)
					return
				}
				require.ErrorIs(t, err, tt.dirErr)
				assert.Contains(t, err.Error(), tt.path+": not a directory (")
			})
		}
	}
}

func TestMissing(t *testing.T) {
	f := newFixture(t)
	for name, fn := range map[string]func(string) error{
		"ReadFile":     func(p string) error { _, err := safefile.ReadFile(p, 10); return err },
		"Open":         func(p string) error { _, err := safefile.Open(p); return err },
		"ReadDir":      func(p string) error { _, err := safefile.ReadDir(p); return err },
		"CheckRegular": safefile.CheckRegular,
		"CheckDir":     safefile.CheckDir,
	} {
		err := fn(f.missing)
		assert.ErrorIs(t, err, fs.ErrNotExist, name)
		var pe *fs.PathError
		assert.ErrorAs(t, err, &pe, name)
	}
	// O_CREATE makes a missing file, as os.OpenFile does.
	fh, err := safefile.OpenFile(f.missing, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	require.NoError(t, err)
	_, err = fh.WriteString("x")
	require.NoError(t, err)
	require.NoError(t, fh.Close())
}

func TestReadFileCap(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name string
		max  int64
		want error
	}{
		{name: "under the cap", max: 101},
		{name: "at the cap", max: 100},
		{name: "one over the cap", max: 99, want: safefile.ErrTooLarge},
		{name: "zero cap", max: 0, want: safefile.ErrTooLarge},
		{name: "negative cap is zero", max: -5, want: safefile.ErrTooLarge},
		{name: "largest cap", max: 1<<63 - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := safefile.ReadFile(f.big, tt.max)
			if tt.want == nil {
				require.NoError(t, err)
				assert.Len(t, b, 100)
				return
			}
			require.ErrorIs(t, err, tt.want)
			assert.Nil(t, b)
			assert.Contains(t, err.Error(), f.big+": file too large (more than ")
		})
	}
	b, err := safefile.ReadFile(f.linkRegular, 5)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(b))
}

// TestOpenedFileIsBlocking: the O_NONBLOCK used to open is cleared, so the
// file behaves as one from os.Open.
func TestOpenedFileIsBlocking(t *testing.T) {
	f := newFixture(t)
	fh, err := safefile.OpenFile(f.regular, os.O_RDWR|os.O_APPEND, 0)
	require.NoError(t, err)
	defer fh.Close()
	rc, err := fh.SyscallConn()
	require.NoError(t, err)
	var flags int
	require.NoError(t, rc.Control(func(fd uintptr) {
		r, _, _ := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		flags = int(r)
	}))
	assert.Zero(t, flags&syscall.O_NONBLOCK)
}

func TestWithoutPath(t *testing.T) {
	f := newFixture(t)
	_, err := safefile.ReadFile(f.fifo, 10)
	var e *safefile.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "not a regular file (named pipe)", e.WithoutPath().Error())
	assert.ErrorIs(t, e.WithoutPath(), safefile.ErrNotRegular)
	assert.Equal(t, f.fifo, e.Path, "the original is unchanged")
}

func TestKind(t *testing.T) {
	for m, want := range map[fs.FileMode]string{
		0:                                 "regular file",
		fs.ModeNamedPipe:                  "named pipe",
		fs.ModeDevice | fs.ModeCharDevice: "character device",
		fs.ModeDevice:                     "block device",
		fs.ModeSocket:                     "socket",
		fs.ModeDir:                        "directory",
		fs.ModeSymlink:                    "symbolic link",
		fs.ModeIrregular:                  "irregular file",
	} {
		assert.Equal(t, want, safefile.Kind(m), "%v", m)
	}
}
