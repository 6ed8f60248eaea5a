//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package filelock

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLocking(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	a, err := os.Create(path)
	require.NoError(t, err)
	b, err := os.Open(path)
	require.NoError(t, err)
	defer b.Close()

	require.NoError(t, TryLock(a))
	assert.ErrorIs(t, TryLock(b), ErrLocked)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, LockContext(ctx, b), ErrLocked)

	released := make(chan struct{})
	go func() {
		time.Sleep(30 * time.Millisecond)
		a.Close() // closing the descriptor releases the lock
		close(released)
	}()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	require.NoError(t, LockContext(ctx2, b))
	<-released
}

func TestUnlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	a, err := os.Create(path)
	require.NoError(t, err)
	defer a.Close()
	b, err := os.Open(path)
	require.NoError(t, err)
	defer b.Close()

	for range 3 { // the lock passes back and forth without closing either
		require.NoError(t, TryLock(a))
		assert.ErrorIs(t, TryLock(b), ErrLocked)
		require.NoError(t, Unlock(a))
		require.NoError(t, TryLock(b))
		assert.ErrorIs(t, TryLock(a), ErrLocked)
		require.NoError(t, Unlock(b))
	}
	require.NoError(t, Unlock(a), "unlocking an unlocked file is harmless")
}
