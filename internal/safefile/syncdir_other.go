//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package safefile

import "os"

// SyncDir is a no-op where directories cannot be fsynced (on Windows NTFS
// journals the rename).
func SyncDir(*os.File) error { return nil }
