package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces the file at path with data so that a reader
// sees either the old file or the new one, never a part: data goes to a
// temporary file in the same directory (".NAME.*.tmp", mode perm), which
// is fsynced, renamed over path, and the directory fsynced, so the new
// content survives a crash once it returns. A path that exists and is not
// a regular file is refused (*Error, ErrNotRegular); the directory must
// exist. On failure the temporary file is removed and path is unchanged.
//
// Concurrent writers must be serialised by the caller (a lock file): the
// last rename wins.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	return Replace{}.WriteFile(path, data, perm)
}

// Replace is WriteFileAtomic with options; the zero value is
// WriteFileAtomic.
type Replace struct {
	// TempSuffix, when set, names the temporary file path+TempSuffix
	// instead of a fresh name. It is opened with OpenFile and truncated,
	// so a file of another kind there is refused (*Error, ErrNotRegular)
	// and one left by a crash is reused; writers must be serialised.
	TempSuffix string
	// Dir is path's directory, already open (OpenDir), for a caller that
	// replaces often; nil opens it for the call. It is not closed.
	Dir *os.File
	// NoSync skips both fsyncs: readers still see the old file or the new
	// one, but after a crash the new one may be empty or missing.
	NoSync bool
}

// WriteFile replaces the file at path with data, as WriteFileAtomic does,
// with r's options.
func (r Replace) WriteFile(path string, data []byte, perm fs.FileMode) error {
	if err := CheckRegular(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(path)
	d := r.Dir
	if d == nil {
		var err error
		if d, err = OpenDir(dir); err != nil {
			return err
		}
		defer d.Close()
	}
	var f *os.File
	var err error
	if r.TempSuffix != "" {
		f, err = OpenFile(path+r.TempSuffix, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	} else {
		f, err = os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	}
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil && !r.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if !r.NoSync {
		if err := SyncDir(d); err != nil {
			return &fs.PathError{Op: "sync", Path: dir, Err: err}
		}
	}
	return nil
}
