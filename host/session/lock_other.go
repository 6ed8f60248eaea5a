//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package session

import "os"

// syncDir is a no-op where directories cannot be fsynced.
func syncDir(*os.File) error { return nil }
