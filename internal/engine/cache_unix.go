//go:build unix

package engine

import (
	"fmt"
	"os"
	"syscall"
)

// checkPrivate refuses path unless it is owned by the effective user and
// no one else may write it (a directory) or read or write it (the key,
// dir false).
func checkPrivate(path string, dir bool) error {
	fi, err := os.Stat(path)
	if err != nil {
		return &CacheError{Path: path, Reason: "cannot stat", Err: err}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &CacheError{Path: path, Reason: "cannot read owner"}
	}
	switch {
	case dir && !fi.IsDir():
		return &CacheError{Path: path, Reason: "not a directory"}
	case !dir && !fi.Mode().IsRegular():
		return &CacheError{Path: path, Reason: "key is not a regular file"}
	case int(st.Uid) != os.Geteuid():
		return &CacheError{Path: path, Reason: fmt.Sprintf("owned by uid %d, not by uid %d running the host", st.Uid, os.Geteuid())}
	case dir && fi.Mode().Perm()&0o022 != 0:
		return &CacheError{Path: path, Reason: fmt.Sprintf("mode %04o lets group or others write it (chmod go-w)", fi.Mode().Perm())}
	case !dir && fi.Mode().Perm()&0o077 != 0:
		return &CacheError{Path: path, Reason: fmt.Sprintf("key mode %04o lets group or others read or write it (chmod 600)", fi.Mode().Perm())}
	}
	return nil
}
