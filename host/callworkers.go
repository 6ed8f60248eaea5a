package host

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// callWorkers runs guest calls on parked goroutines instead of a new
// goroutine per call. A guest call needs a goroutine of its own so that its
// stage can be abandoned at the deadline (Host.evaluate), but a new one
// costs each call its creation and, as the call goes through wazero and the
// host functions, several stack growths: 40–60 µs of a 0.3 ms call
// (docs/PERFORMANCE.md, "Configs once per instance, parked workers"). A worker keeps its
// grown stack between calls.
//
// A worker that finishes a call parks until the next one, for at most
// workerIdle, or until close. At most maxIdle workers park; more exit.
type callWorkers struct {
	mu      sync.Mutex
	idle    []*callWorker
	maxIdle int
	closed  bool
	quit    chan struct{}
	// live counts the worker goroutines, parked or running.
	live atomic.Int64
}

type callWorker struct {
	// job is buffered: run hands a job to a worker it took from idle
	// without waiting for it to be received.
	job chan func()
}

// workerIdle is how long a parked worker waits for a call before it exits.
const workerIdle = 30 * time.Second

func newCallWorkers(maxIdle int) *callWorkers {
	return &callWorkers{maxIdle: maxIdle, quit: make(chan struct{})}
}

// run runs f on a parked worker, or on a new goroutine when none is
// parked. It does not wait for f.
func (ws *callWorkers) run(f func()) {
	ws.mu.Lock()
	if n := len(ws.idle); n > 0 {
		w := ws.idle[n-1]
		ws.idle = ws.idle[:n-1]
		ws.mu.Unlock()
		w.job <- f // a worker taken from idle waits for exactly this job
		return
	}
	ws.mu.Unlock()
	w := &callWorker{job: make(chan func(), 1)}
	ws.live.Add(1)
	go w.loop(ws, f)
}

func (w *callWorker) loop(ws *callWorkers, f func()) {
	defer ws.live.Add(-1)
	var t *time.Timer
	for {
		f()
		f = nil
		if !ws.park(w) {
			return
		}
		if t == nil {
			t = time.NewTimer(workerIdle)
		} else {
			t.Reset(workerIdle)
		}
		select {
		case f = <-w.job:
		case <-t.C:
		case <-ws.quit:
		}
		// Leaving idle is decided under the lock: a worker that run
		// already took has a job on its way, and must take it.
		if f == nil && !ws.unpark(w) {
			f = <-w.job
		}
		if f == nil {
			t.Stop()
			return
		}
	}
}

// park adds w to the idle workers; false when it should exit instead.
func (ws *callWorkers) park(w *callWorker) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed || len(ws.idle) >= ws.maxIdle {
		return false
	}
	ws.idle = append(ws.idle, w)
	return true
}

// unpark removes w from the idle workers; false when run took it first.
func (ws *callWorkers) unpark(w *callWorker) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	i := slices.Index(ws.idle, w)
	if i < 0 {
		return false
	}
	ws.idle = slices.Delete(ws.idle, i, i+1)
	return true
}

// close makes the parked workers exit, and those still running exit after
// their call. Calls run after close still run, each on a new goroutine.
func (ws *callWorkers) close() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if !ws.closed {
		ws.closed = true
		close(ws.quit)
	}
}
