package host

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCallWorkers: every job runs, concurrent jobs each on a goroutine of
// their own, finished workers are reused up to maxIdle, and close ends the
// parked ones while jobs handed over still run.
func TestCallWorkers(t *testing.T) {
	ws := newCallWorkers(2)
	// Four jobs at once: none may wait for another.
	var started sync.WaitGroup
	started.Add(4)
	release := make(chan struct{})
	var done sync.WaitGroup
	done.Add(4)
	for range 4 {
		ws.run(func() {
			started.Done()
			<-release
			done.Done()
		})
	}
	started.Wait()
	close(release)
	done.Wait()
	require.Eventually(t, func() bool {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		return len(ws.idle) == 2
	}, 10*time.Second, time.Millisecond, "two workers park, the others exit")

	// Parked workers take the next jobs: no worker is added.
	var ran atomic.Int32
	for range 100 {
		ch := make(chan struct{})
		ws.run(func() { ran.Add(1); close(ch) })
		<-ch
	}
	assert.EqualValues(t, 100, ran.Load())
	ws.mu.Lock()
	assert.LessOrEqual(t, len(ws.idle), 2)
	ws.mu.Unlock()

	ws.close()
	require.Eventually(t, func() bool { return ws.live.Load() == 0 }, 10*time.Second, time.Millisecond,
		"parked workers exit at close")
	ch := make(chan struct{})
	ws.run(func() { close(ch) }) // after close, on a goroutine of its own
	<-ch
	require.Eventually(t, func() bool { return ws.live.Load() == 0 }, 10*time.Second, time.Millisecond,
		"a worker started after close exits after its job")
}
