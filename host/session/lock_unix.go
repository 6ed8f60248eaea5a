//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package session

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f, waiting for it: two processes
// updating one session file must not lose each other's changes. The lock
// goes away with the descriptor.
func lockFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lerr = syscall.Flock(int(fd), syscall.LOCK_EX)
			if lerr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return lerr
}

// syncDir makes a rename in d durable.
func syncDir(d *os.File) error { return d.Sync() }
