// Package filelock takes exclusive advisory locks on open files (flock(2) on
// Unix). A lock goes away with its descriptor, so a crashed process never
// leaves one behind. Where flock is unavailable the functions succeed
// without locking; a single writer is then the caller's responsibility.
//
// flock locks belong to an open file description: two descriptors opened
// separately on one file exclude each other even within one process.
package filelock

import (
	"context"
	"errors"
	"syscall"
	"time"
)

// File is what the functions need of an open file; *os.File has it.
type File interface {
	SyscallConn() (syscall.RawConn, error)
}

// ErrLocked is returned by TryLock when another descriptor holds the lock.
var ErrLocked = errors.New("locked by another process")

// Lock takes an exclusive lock on f, waiting as long as it takes.
func Lock(f File) error { return lock(f, true) }

// TryLock takes an exclusive lock on f or returns ErrLocked at once.
func TryLock(f File) error { return lock(f, false) }

// Unlock releases the lock f holds, if any. Closing f releases it too.
func Unlock(f File) error { return unlock(f) }

// pollInterval is how often LockContext retries a held lock.
const pollInterval = 10 * time.Millisecond

// LockContext takes an exclusive lock on f, retrying while another
// descriptor holds it, until ctx is done; then it returns ErrLocked.
func LockContext(ctx context.Context, f File) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		err := TryLock(f)
		if !errors.Is(err, ErrLocked) {
			return err
		}
		select {
		case <-ctx.Done():
			return ErrLocked
		case <-t.C:
		}
	}
}
