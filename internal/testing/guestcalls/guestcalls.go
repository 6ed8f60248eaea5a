// Package guestcalls counts the guest functions a module calls, for
// benchmarks: a count that, unlike time, is the same on every machine and
// under any load. In a Go guest compiled to WebAssembly a function call
// costs tens of nanoseconds, so the count of calls per run follows the
// guest's own cost closely (docs/PERFORMANCE.md).
//
// Counting works through wazero's function listeners, which are fixed
// when a module is compiled: pass the context of Counter.Context to
// host.New, with a CacheDir of its own, so that no module compiled without
// listeners is taken from the cache.
package guestcalls

import (
	"context"
	"sort"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// Counter counts guest function calls while it is on.
type Counter struct {
	mu    sync.Mutex
	on    bool
	total int
	by    map[string]int
}

// New returns a Counter that is off.
func New() *Counter { return &Counter{by: map[string]int{}} }

// Context returns ctx carrying the counter's listeners, for host.New.
func (c *Counter) Context(ctx context.Context) context.Context {
	return experimental.WithFunctionListenerFactory(ctx, c)
}

// Start clears the counts and turns counting on; Stop turns it off.
func (c *Counter) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on, c.total = true, 0
	clear(c.by)
}

// Stop turns counting off and returns the calls counted since Start.
func (c *Counter) Stop() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	return c.total
}

// Func is one guest function and the calls counted.
type Func struct {
	Name  string
	Calls int
}

// Top returns the n most called functions since Start, most called first.
func (c *Counter) Top(n int) []Func {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Func, 0, len(c.by))
	for name, k := range c.by {
		out = append(out, Func{name, k})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Calls != out[j].Calls {
			return out[i].Calls > out[j].Calls
		}
		return out[i].Name < out[j].Name
	})
	return out[:min(n, len(out))]
}

// NewFunctionListener implements experimental.FunctionListenerFactory.
func (c *Counter) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	return listener{c: c, name: def.DebugName()}
}

type listener struct {
	c    *Counter
	name string
}

func (l listener) Before(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
	l.c.mu.Lock()
	if l.c.on {
		l.c.total++
		l.c.by[l.name]++
	}
	l.c.mu.Unlock()
}

func (listener) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}
func (listener) Abort(context.Context, api.Module, api.FunctionDefinition, error)    {}

// Measure runs a benchmark's loop over run (one gate call through a host
// made with c.Context) and reports the guest's function calls per run as
// "guest-calls/op"; the first run, not counted, fills the instance's
// caches. With -v it logs the 15 functions one run calls most: where to
// look first. Its time is not the gate's: every call goes through a
// listener. It skips when the build's engine calls no listeners.
func (c *Counter) Measure(b *testing.B, run func()) {
	b.Helper()
	run()
	calls := 0
	for b.Loop() {
		c.Start()
		run()
		calls += c.Stop()
	}
	if calls == 0 {
		b.Skip("the engine of this build calls no function listeners")
	}
	b.ReportMetric(float64(calls)/float64(b.N), "guest-calls/op")
	c.Start()
	run()
	c.Stop()
	for _, f := range c.Top(15) {
		b.Logf("%6d %s", f.Calls, f.Name)
	}
}
