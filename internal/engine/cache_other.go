//go:build !unix

package engine

import "os"

// checkPrivate checks only the kind of path off unix, where ownership and
// mode bits are not what decides access.
func checkPrivate(path string, dir bool) error {
	fi, err := os.Stat(path)
	if err != nil {
		return &CacheError{Path: path, Reason: "cannot stat", Err: err}
	}
	if dir != fi.IsDir() {
		return &CacheError{Path: path, Reason: "wrong kind of file"}
	}
	return nil
}
