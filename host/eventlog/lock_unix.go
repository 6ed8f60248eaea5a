//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package eventlog

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive, non-blocking flock on f. Two writers on one
// log would interleave their chains; the lock goes away with the descriptor,
// so a crashed process never leaves it behind.
func lockFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
	}); err != nil {
		return err
	}
	if errors.Is(lerr, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return lerr
}

// syncDir makes a create or rename in d durable.
func syncDir(d *os.File) error { return d.Sync() }
