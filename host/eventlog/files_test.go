//go:build unix

package eventlog

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/safefile"
	"github.com/gatehost/gatehost/internal/safefile/safefiletest"
)

// TestOpenRefusesSpecialFiles: a log path, its head file or the head's
// temporary file naming a named pipe, a device or a directory is refused by
// Open and Verify at once; the log is streamed, so it has no size cap.
func TestOpenRefusesSpecialFiles(t *testing.T) {
	fx := safefiletest.New(t)
	for _, c := range fx.NotFiles() {
		t.Run("log/"+c.Name, func(t *testing.T) {
			err := safefiletest.Returns(t, func() error {
				l, err := Open(c.Path, Options{NoSync: true})
				if err == nil {
					l.Close()
				}
				return err
			})
			require.ErrorIs(t, err, c.Want)
			assert.EqualError(t, err, "eventlog: "+c.Path+": "+c.Reason)
		})
		t.Run("verify/"+c.Name, func(t *testing.T) {
			err := safefiletest.Returns(t, func() error { _, err := Verify(c.Path); return err })
			require.ErrorIs(t, err, c.Want)
			assert.Contains(t, err.Error(), c.Path+": "+c.Reason)
		})
	}
	// Beside a fresh log: the head checkpoint, and the temporary file it is
	// written through.
	for _, suffix := range []string{".head", ".head.tmp"} {
		t.Run(suffix, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.jsonl")
			require.NoError(t, syscall.Mkfifo(path+suffix, 0o644))
			err := safefiletest.Returns(t, func() error {
				l, err := Open(path, Options{NoSync: true})
				if err == nil {
					l.Close()
				}
				return err
			})
			require.ErrorIs(t, err, safefile.ErrNotRegular)
			assert.Contains(t, err.Error(), path+suffix+": not a regular file (named pipe)")
		})
	}
	t.Run("head over its cap", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "events.jsonl")
		require.NoError(t, os.WriteFile(path+".head", nil, 0o640))
		require.NoError(t, os.Truncate(path+".head", maxHeadBytes+1))
		_, err := Verify(path)
		require.ErrorIs(t, err, safefile.ErrTooLarge)
	})
}
