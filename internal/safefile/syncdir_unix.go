//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package safefile

import "os"

// SyncDir makes a create, rename or removal in the directory d durable.
func SyncDir(d *os.File) error { return d.Sync() }
