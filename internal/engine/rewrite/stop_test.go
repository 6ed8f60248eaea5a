package rewrite

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// interruptWord is the rewritten instance's interrupt word.
func interruptWord(t *testing.T, mod api.Module) api.MutableGlobal {
	t.Helper()
	g, ok := mod.ExportedGlobal(InterruptExport).(api.MutableGlobal)
	require.True(t, ok, "%s is an exported mutable global", InterruptExport)
	return g
}

// interrupt stops the rewritten instance's guest as the host does: the
// word set, then the countdown zeroed.
func interrupt(t *testing.T, mod api.Module) {
	t.Helper()
	interruptWord(t, mod).Set(1)
	g, ok := mod.ExportedGlobal(CountdownExport).(api.MutableGlobal)
	require.True(t, ok, "%s is an exported mutable global", CountdownExport)
	g.Set(0)
}

// TestInterruptStops runs each runaway shape of testdata/stop.wat,
// rewritten, on wazero with WithCloseOnContextDone off, and sets the
// interrupt word while it runs. No timing is involved: the word is set by a
// host function the guest calls, or by a goroutine once the guest has
// reported (global "progress") that it reached the runaway part; the call
// must then end in the rewrite's trap. Without the rewrite each call runs
// forever, so a test that passes proves the stop. The goroutine first runs
// a garbage collection, which waits for every goroutine to be preempted:
// it returns only because the guest passes the rewrite's safepoints.
func TestInterruptStops(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	var ticks atomic.Int64
	const ticksBeforeInterrupt = 1000
	_, err := rt.NewHostModuleBuilder("host").
		NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module) {
		if ticks.Add(1) == ticksBeforeInterrupt {
			interrupt(t, m)
		}
	}).Export("tick").
		NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module) {
		interrupt(t, m)
	}).Export("interrupt").
		Instantiate(ctx)
	require.NoError(t, err)
	// Small chunks for the bulk-memory shapes: many interrupt tests per
	// instruction.
	cm, err := rt.CompileModule(ctx, mustRewrite(t, assemble(t, "stop.wat"), Options{ChunkBytes: 64 << 10}))
	require.NoError(t, err)

	tests := []struct {
		fn string
		// byGoroutine: set from another goroutine once progress is 1;
		// otherwise the guest's host call sets it.
		byGoroutine bool
		check       func(t *testing.T, mod api.Module)
	}{
		{fn: "tight", byGoroutine: true},
		{fn: "loop_calls", byGoroutine: true},
		{fn: "deep_recursion", byGoroutine: true},
		{fn: "fib", byGoroutine: true},
		{fn: "fill_forever", byGoroutine: true},
		{fn: "copy_forever", byGoroutine: true},
		{fn: "host_loop", check: func(t *testing.T, _ api.Module) {
			assert.Equal(t, int64(ticksBeforeInterrupt), ticks.Load(), "stopped at the first loop header after the interrupt")
		}},
		{fn: "fill_after_interrupt", check: func(t *testing.T, mod api.Module) {
			mem := mod.ExportedMemory("memory")
			for _, off := range []uint32{0, 1 << 27, mem.Size() - 1} {
				b, ok := mem.ReadByte(off)
				require.True(t, ok)
				assert.Zero(t, b, "byte %d written after the interrupt", off)
			}
		}},
		{fn: "small_fills_after_interrupt", check: func(t *testing.T, mod api.Module) {
			b, ok := mod.ExportedMemory("memory").Read(0, 32)
			require.True(t, ok)
			assert.Equal(t, make([]byte, 32), b, "nothing filled after the interrupt")
		}},
		{fn: "unwind_after_interrupt", check: func(t *testing.T, mod api.Module) {
			assert.Zero(t, mod.ExportedGlobal("tails").Get(), "frames ran their tails after the interrupt")
		}},
		{fn: "copy_after_interrupt", check: func(t *testing.T, mod api.Module) {
			b, ok := mod.ExportedMemory("memory").Read(0, 8)
			require.True(t, ok)
			assert.Equal(t, []byte{4, 3, 2, 1, 0, 0, 0, 0}, b, "nothing copied after the interrupt")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
			require.NoError(t, err)
			defer mod.Close(ctx)
			word := interruptWord(t, mod)
			done := make(chan struct{})
			stopped := make(chan struct{})
			if tt.byGoroutine {
				progress := mod.ExportedGlobal("progress")
				go func() {
					defer close(stopped)
					for progress.Get() == 0 {
						select {
						case <-done:
							return
						default:
							runtime.Gosched()
						}
					}
					// A full collection stops the world: it completes
					// only because the guest passes safepoints.
					runtime.GC()
					interrupt(t, mod)
				}()
			} else {
				close(stopped)
			}
			_, err = mod.ExportedFunction(tt.fn).Call(ctx)
			close(done)
			<-stopped
			require.Error(t, err, "the call ended without the interrupt")
			assert.ErrorContains(t, err, "unreachable", "the rewrite's trap, not another one")
			assert.NotZero(t, word.Get())
			if tt.check != nil {
				tt.check(t, mod)
			}
		})
	}
}
