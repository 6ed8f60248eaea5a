// Package safefile opens and reads the files an operator names (in a config
// file or a flag) so that a wrong kind of file fails at once with a typed
// error instead of hanging or exhausting memory.
//
// Every function follows symbolic links and judges the file they lead to:
// configuration is often mounted through links (a Kubernetes ConfigMap, a
// /etc/alternatives entry), and what matters is what the link reaches. The
// check that counts is an fstat of the opened descriptor, so a file swapped
// between a check and the open cannot slip through. Opens add O_NONBLOCK
// where the platform has it, so that opening a named pipe with no writer
// returns at once (and is then refused) rather than blocking the process
// beyond the reach of signals.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
)

// Sentinels for errors.Is; an *Error wraps exactly one of them.
var (
	// ErrNotRegular: the path names something other than a regular file
	// (a named pipe, a device, a socket, a directory).
	ErrNotRegular = errors.New("not a regular file")
	// ErrNotDir: the path names something other than a directory.
	ErrNotDir = errors.New("not a directory")
	// ErrTooLarge: the file holds more bytes than the caller's cap.
	ErrTooLarge = errors.New("file too large")
)

// Error is a file refused for its kind or its size.
type Error struct {
	// Path is the path as given; "" when the caller names the file itself.
	Path string
	// Err is ErrNotRegular, ErrNotDir or ErrTooLarge.
	Err error
	// Detail says what was found: "named pipe", "more than 1048576 bytes".
	Detail string
}

// Error reads "PATH: not a regular file (named pipe)".
func (e *Error) Error() string {
	s := e.Err.Error()
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	if e.Path != "" {
		s = e.Path + ": " + s
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// WithoutPath returns a copy of e that does not repeat the path, for
// callers whose own error already names the file.
func (e *Error) WithoutPath() *Error {
	c := *e
	c.Path = ""
	return &c
}

// Kind names a file mode's type for people: "named pipe", "character
// device", "directory", ….
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "irregular file"
}

func notRegular(path string, m fs.FileMode) error {
	return &Error{Path: path, Err: ErrNotRegular, Detail: Kind(m)}
}

func notDir(path string, m fs.FileMode) error {
	return &Error{Path: path, Err: ErrNotDir, Detail: Kind(m)}
}

func tooLarge(path string, max int64) error {
	return &Error{Path: path, Err: ErrTooLarge, Detail: fmt.Sprintf("more than %d bytes", max)}
}

// CheckRegular reports whether path, if it exists, is a regular file,
// without opening it. A missing path gives the *fs.PathError of os.Stat
// (errors.Is(err, fs.ErrNotExist)); a file of another kind an *Error with
// ErrNotRegular. It is an early, friendly check: the reading functions
// check again on the opened descriptor.
func CheckRegular(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return notRegular(path, fi.Mode())
	}
	return nil
}

// CheckDir is CheckRegular for a directory: an *Error with ErrNotDir when
// path exists and is not one.
func CheckDir(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return notDir(path, fi.Mode())
	}
	return nil
}

// Open opens a regular file for reading. See OpenFile.
func Open(path string) (*os.File, error) { return OpenFile(path, os.O_RDONLY, 0) }

// OpenFile is os.OpenFile for a regular file: a path that exists and is
// not one is refused (*Error, ErrNotRegular) without being opened, and the
// opened descriptor is checked again with fstat. With os.O_CREATE a missing
// file is created as usual. Other failures are the *fs.PathError of the
// open.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	// Checked before opening too: opening a device can itself act (rewind
	// a tape, hang up a line), and a pipe opened for writing with no
	// reader fails with a less telling ENXIO.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, notRegular(path, fi.Mode())
	}
	f, err := os.OpenFile(path, flag|oNonblock, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(path, fi.Mode())
	}
	if err := clearNonblock(f); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return f, nil
}

// ReadFile reads the regular file at path, of at most max bytes (max ≥ 0).
// A larger file is an *Error with ErrTooLarge; it is told by its size
// before reading, and by reading at most max+1 bytes for a file that grows
// meanwhile, so no more than max+1 bytes are ever held. Other errors are
// those of OpenFile.
func ReadFile(path string, max int64) ([]byte, error) {
	max = clamp(max)
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, tooLarge(path, max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, tooLarge(path, max)
	}
	return data, nil
}

// OpenDir opens the directory at path for reading its entries or for
// fsync: a path that is not a directory is an *Error with ErrNotDir.
func OpenDir(path string) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		return nil, notDir(path, fi.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.IsDir() {
		f.Close()
		return nil, notDir(path, fi.Mode())
	}
	return f, nil
}

// ReadDir lists the directory at path as os.ReadDir does (sorted by name),
// refusing a path that is not a directory (*Error, ErrNotDir).
func ReadDir(path string) ([]os.DirEntry, error) {
	f, err := OpenDir(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

func clamp(max int64) int64 {
	if max < 0 {
		return 0
	}
	// max+1 must not overflow.
	return min(max, math.MaxInt64-1)
}
