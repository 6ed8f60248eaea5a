//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package session

import "os"

// lockFile is a no-op where flock is unavailable; one writing process at a
// time is then the embedder's responsibility.
func lockFile(*os.File) error { return nil }

// syncDir is a no-op where directories cannot be fsynced.
func syncDir(*os.File) error { return nil }
