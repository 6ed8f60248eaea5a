//go:build unix

// Package safefiletest makes, for tests, the files a configured path must
// not name: a named pipe, a link to one, a device, a directory, and files
// over a size cap.
package safefiletest

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gatehost/gatehost/internal/safefile"
)

// Case is one wrong file: where it is, the sentinel its refusal wraps, and
// the reason the message ends with after the path.
type Case struct {
	Name   string
	Path   string
	Want   error
	Reason string
}

// Fixture holds one file of each wrong kind in a test's temp directory.
type Fixture struct {
	Dir      string
	FIFO     string // a named pipe with no writer
	LinkFIFO string // a symbolic link to FIFO
	Zero     string // /dev/zero: a device that never ends
	Subdir   string // a directory
	Regular  string // a small regular file
}

// New makes a Fixture under t.TempDir().
func New(t testing.TB) Fixture {
	t.Helper()
	d := t.TempDir()
	f := Fixture{
		Dir: d, FIFO: filepath.Join(d, "fifo"), LinkFIFO: filepath.Join(d, "link-to-fifo"),
		Zero: "/dev/zero", Subdir: filepath.Join(d, "subdir"), Regular: filepath.Join(d, "regular"),
	}
	if err := syscall.Mkfifo(f.FIFO, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		os.Symlink(f.FIFO, f.LinkFIFO), os.Mkdir(f.Subdir, 0o755), os.WriteFile(f.Regular, []byte("{}"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// NotFiles are the cases of a path where a regular file is expected.
func (f Fixture) NotFiles() []Case {
	return []Case{
		{Name: "named pipe", Path: f.FIFO, Want: safefile.ErrNotRegular, Reason: "not a regular file (named pipe)"},
		{Name: "symlink to a named pipe", Path: f.LinkFIFO, Want: safefile.ErrNotRegular, Reason: "not a regular file (named pipe)"},
		{Name: "/dev/zero", Path: f.Zero, Want: safefile.ErrNotRegular, Reason: "not a regular file (character device)"},
		{Name: "directory", Path: f.Subdir, Want: safefile.ErrNotRegular, Reason: "not a regular file (directory)"},
	}
}

// OverCap is a sparse file of max+1 bytes named name: its size alone
// refuses it, before any read.
func (f Fixture) OverCap(t testing.TB, name string, max int64) Case {
	t.Helper()
	p := filepath.Join(f.Dir, name)
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, max+1); err != nil {
		t.Fatal(err)
	}
	return Case{Name: "over the cap", Path: p, Want: safefile.ErrTooLarge, Reason: "file too large (more than " + strconv.FormatInt(max, 10) + " bytes)"}
}

// Returns runs fn and fails the test if it never returns. The bound is a
// safety net against a hung test binary, not the assertion: a refused file
// is refused without any wait.
func Returns[T any](t testing.TB, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	select {
	case v := <-done:
		return v
	case <-time.After(2 * time.Minute):
		t.Fatal("the call blocked on a file")
		panic("unreachable")
	}
}
