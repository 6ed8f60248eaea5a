// Package filelock takes exclusive advisory locks on open files (flock(2) on
// Unix). A lock goes away with its descriptor, so a crashed process never
// leaves one behind. Where flock is unavailable the functions succeed
// without locking; a single writer is then the caller's responsibility.
package filelock

import (
	"context"
	"errors"
	"os"
	"time"
)

// ErrLocked is returned by TryLock when another descriptor holds the lock.
var ErrLocked = errors.New("locked by another process")

// Lock takes an exclusive lock on f, waiting as long as it takes.
func Lock(f *os.File) error { return lock(f, true) }

// TryLock takes an exclusive lock on f or returns ErrLocked at once.
func TryLock(f *os.File) error { return lock(f, false) }

// pollInterval is how often LockContext retries a held lock.
const pollInterval = 10 * time.Millisecond

// LockContext takes an exclusive lock on f, retrying while another
// descriptor holds it, until ctx is done; then it returns ErrLocked.
func LockContext(ctx context.Context, f *os.File) error {
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
