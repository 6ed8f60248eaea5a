package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
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
	if err := CheckRegular(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(path)
	d, err := OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
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
	// Directories cannot be fsynced on Windows; NTFS journals the rename.
	if runtime.GOOS != "windows" {
		if err := d.Sync(); err != nil {
			return &fs.PathError{Op: "sync", Path: dir, Err: err}
		}
	}
	return nil
}
