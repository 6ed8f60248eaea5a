//go:build unix

package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/filelock"
	"github.com/gatehost/gatehost/internal/safefile"
	"github.com/gatehost/gatehost/internal/safefile/safefiletest"
)

// TestFileStoreRefusesSpecialFiles: a session file that is a named pipe, a
// device or a directory, or over MaxFileBytes, is an ErrStore error at once
// — never an empty store, never a wait — for reading and for updating.
func TestFileStoreRefusesSpecialFiles(t *testing.T) {
	fx := safefiletest.New(t)
	ctx := context.Background()
	cases := append(fx.NotFiles(), fx.OverCap(t, "sessions.json", session.MaxFileBytes))
	// Update makes a lock file beside the path: a link to the device keeps
	// it out of /dev.
	zero := filepath.Join(fx.Dir, "zero")
	require.NoError(t, os.Symlink(fx.Zero, zero))
	for _, c := range cases {
		if c.Path == fx.Zero {
			c.Path = zero
		}
		t.Run(c.Name, func(t *testing.T) {
			fs := session.NewFileStore(c.Path)
			for op, call := range map[string]func() error{
				"load": func() error { _, err := fs.Load(ctx, "s-1"); return err },
				"ids":  func() error { _, err := fs.IDs(ctx); return err },
				"update": func() error {
					_, err := fs.Update(ctx, "s-1", func(s *session.Set) (*session.Set, error) { return s, nil })
					return err
				},
			} {
				err := safefiletest.Returns(t, call)
				require.ErrorIs(t, err, session.ErrStore, op)
				require.ErrorIs(t, err, c.Want, op)
				assert.Contains(t, err.Error(), c.Path+": "+c.Reason, op)
			}
		})
	}
	t.Run("lock file is a named pipe", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sessions.json")
		require.NoError(t, syscall.Mkfifo(path+".lock", 0o644))
		err := safefiletest.Returns(t, func() error {
			_, err := session.NewFileStore(path).Update(ctx, "s-1", func(s *session.Set) (*session.Set, error) { return s, nil })
			return err
		})
		require.ErrorIs(t, err, session.ErrStore)
		require.ErrorIs(t, err, safefile.ErrNotRegular)
		assert.Contains(t, err.Error(), path+".lock: not a regular file (named pipe)")
	})
}

// TestFileStoreUpdateEndsWithItsContext: an Update waiting for the file's
// cross-process lock, or for another Update of its process, gives up when
// its context ends (an ErrStore error naming the cause, the file
// unchanged) instead of waiting for ever on a holder that never lets go.
func TestFileStoreUpdateEndsWithItsContext(t *testing.T) {
	keep := func(s *session.Set) (*session.Set, error) { return s, nil }
	ended, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("the stage ended")
	cancel(cause)

	t.Run("another process holds the lock", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sessions.json")
		fs := session.NewFileStore(path)
		_, err := fs.Update(context.Background(), "s-1", keep)
		require.NoError(t, err, "the lock file exists once an update ran")
		before, err := os.ReadFile(path)
		require.NoError(t, err)
		holder, err := os.OpenFile(path+".lock", os.O_RDWR, 0)
		require.NoError(t, err)
		require.NoError(t, filelock.TryLock(holder))

		err = safefiletest.Returns(t, func() error { _, err := fs.Update(ended, "s-1", keep); return err })
		require.ErrorIs(t, err, session.ErrStore)
		require.ErrorIs(t, err, filelock.ErrLocked)
		require.ErrorIs(t, err, cause)
		after, rerr := os.ReadFile(path)
		require.NoError(t, rerr)
		assert.Equal(t, before, after)

		require.NoError(t, holder.Close()) // released: the next update goes through
		_, err = fs.Update(context.Background(), "s-1", keep)
		require.NoError(t, err)
	})

	t.Run("another update of this process is under way", func(t *testing.T) {
		fs := session.NewFileStore(filepath.Join(t.TempDir(), "sessions.json"))
		inside, release := make(chan struct{}), make(chan struct{})
		first := make(chan error, 1)
		go func() {
			_, err := fs.Update(context.Background(), "s-1", func(s *session.Set) (*session.Set, error) {
				close(inside)
				<-release
				return s, nil
			})
			first <- err
		}()
		<-inside
		err := safefiletest.Returns(t, func() error { _, err := fs.Update(ended, "s-2", keep); return err })
		require.ErrorIs(t, err, session.ErrStore)
		require.ErrorIs(t, err, cause)
		close(release)
		require.NoError(t, <-first)
	})
}
