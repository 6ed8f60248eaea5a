//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package session

import (
	"os"
)

// syncDir makes a rename in d durable.
func syncDir(d *os.File) error { return d.Sync() }
