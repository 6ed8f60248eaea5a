//go:build unix

package host

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// TestRunCheckEndsWithItsContext: a check whose command leaves a process
// outside its group holding the output pipe still ends when the stage's
// context does. Killing the group ends the command, but Wait would wait for
// the pipe up to WaitDelay, here an hour, and the stage with it.
func TestRunCheckEndsWithItsContext(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	defer func(d time.Duration) { checkWaitDelay = d }(checkWaitDelay)
	checkWaitDelay = time.Hour
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "escaped.pid")
	started := filepath.Join(dir, "started")
	// The escaped process writes its pid, then holds stdout for ten minutes;
	// the command itself waits until canceled.
	script := `setsid sh -c 'echo $$ > escaped.pid; exec sleep 600' & : > started; exec sleep 600`
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		a   abi.CheckRunAnswer
		err error
	}
	res := make(chan result, 1)
	go func() {
		a, err := runCheck(ctx, "escape", CheckCommand{Argv: []string{"sh", "-c", script}, Timeout: time.Hour}, dir)
		res <- result{a, err}
	}()
	require.Eventually(t, func() bool {
		_, err1 := os.Stat(started)
		_, err2 := os.Stat(pidFile)
		return err1 == nil && err2 == nil
	}, time.Minute, 10*time.Millisecond, "the check's command never started")
	cancel()
	select {
	case r := <-res:
		require.ErrorIs(t, r.err, context.Canceled, "the stage ended: nothing is known of the check")
		assert.Empty(t, r.a.Status)
	case <-time.After(time.Minute):
		t.Fatal("runCheck did not return when its context ended")
	}
}
