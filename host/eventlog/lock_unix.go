//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package eventlog

import (
	"os"
)

// syncDir makes a create or rename in d durable.
func syncDir(d *os.File) error { return d.Sync() }
