package rewrite

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// wasiRecorder stands in for the runtime's WASI functions: it records every
// call that reaches an import, and answers with errno (0 unless failAt,
// counted from 1, names the call that fails with 29, EIO).
type wasiRecorder struct {
	calls  []call
	failAt int
	// onCall runs after a call is recorded (to set the interrupt word).
	onCall func(mod api.Module)
}

func (w *wasiRecorder) install(t *testing.T, rt wazero.Runtime, module string, names map[string][]api.ValueType) {
	t.Helper()
	b := rt.NewHostModuleBuilder(module)
	for name, params := range names {
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, mod api.Module, stack []uint64) {
			w.calls = append(w.calls, call{fn: module + "." + name, args: append([]uint64(nil), stack[:len(params)]...)})
			if w.onCall != nil {
				w.onCall(mod)
			}
			stack[0] = 0
			if len(w.calls) == w.failAt {
				stack[0] = 29
			}
		}), params, []api.ValueType{api.ValueTypeI32}).Export(name)
	}
	_, err := b.Instantiate(context.Background())
	require.NoError(t, err)
}

func TestWASIGuards(t *testing.T) {
	const chunk = 4096
	const mem = 2 * 65536 // the module's memory, bytes
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	wasiNames := map[string][]api.ValueType{
		"random_get":   {i32, i32},
		"poll_oneoff":  {i32, i32, i32, i32},
		"fd_write":     {i32, i32, i32, i32},
		"fd_pread":     {i32, i32, i32, i64, i32},
		"path_open":    {i32, i32, i32, i32, i32, i64, i64, i32, i32},
		"path_symlink": {i32, i32, i32, i32, i32},
	}
	orig := assemble(t, "wasi-guard.wat")
	out := mustRewrite(t, orig, Options{ChunkBytes: chunk})

	w := func(fn string, args ...uint64) call { return call{fn: "wasi_snapshot_preview1." + fn, args: args} }
	const big = uint64(1) << 40 // an i64 argument, passed on unchanged
	tests := []struct {
		name   string
		call   call   // the export called
		failAt int    // the import call that fails with EIO
		want   uint64 // its errno
		calls  []call // what reached the imports
		same   bool   // the original module makes the same calls with the same answer
	}{
		{name: "random_get within one chunk", call: call{"random_get", []uint64{16, 100}}, calls: []call{w("random_get", 16, 100)}, same: true},
		{name: "random_get of nothing", call: call{"random_get", []uint64{0, 0}}, calls: []call{w("random_get", 0, 0)}, same: true},
		{name: "random_get of exactly one chunk", call: call{"random_get", []uint64{0, chunk}}, calls: []call{w("random_get", 0, chunk)}, same: true},
		{name: "random_get in chunks", call: call{"random_get", []uint64{8, 3*chunk + chunk/2}},
			calls: []call{w("random_get", 8, chunk), w("random_get", 8+chunk, chunk), w("random_get", 8+2*chunk, chunk), w("random_get", 8+3*chunk, chunk/2)}},
		{name: "random_get of a whole number of chunks", call: call{"random_get", []uint64{0, 2 * chunk}},
			calls: []call{w("random_get", 0, chunk), w("random_get", chunk, chunk)}},
		{name: "random_get stops at a failing chunk", call: call{"random_get", []uint64{0, 3 * chunk}}, failAt: 2, want: 29,
			calls: []call{w("random_get", 0, chunk), w("random_get", chunk, chunk)}},
		{name: "random_get to the end of memory", call: call{"random_get", []uint64{mem - 10, 10}}, calls: []call{w("random_get", mem-10, 10)}, same: true},
		{name: "random_get past the end of memory", call: call{"random_get", []uint64{mem - 10, 11}}, want: 21},
		{name: "random_get wrapping around", call: call{"random_get", []uint64{math.MaxUint32, 2}}, want: 21},
		{name: "random_get of 4 GiB", call: call{"random_get", []uint64{0, math.MaxUint32}}, want: 21},
		{name: "poll_oneoff at the limit", call: call{"poll_oneoff", []uint64{0, 48, MaxSubscriptions, 96}}, calls: []call{w("poll_oneoff", 0, 48, MaxSubscriptions, 96)}, same: true},
		{name: "poll_oneoff over the limit", call: call{"poll_oneoff", []uint64{0, 48, MaxSubscriptions + 1, 96}}, want: 28},
		{name: "poll_oneoff of 2^32-1 subscriptions", call: call{"poll_oneoff", []uint64{0, 48, math.MaxUint32, 96}}, want: 28},
		{name: "fd_write at the limit", call: call{"fd_write", []uint64{1, 0, MaxIovecs, 8}}, calls: []call{w("fd_write", 1, 0, MaxIovecs, 8)}, same: true},
		{name: "fd_write over the limit", call: call{"fd_write", []uint64{1, 0, MaxIovecs + 1, 8}}, want: 28},
		{name: "fd_pread at the limit keeps its offset", call: call{"fd_pread", []uint64{0, 0, MaxIovecs, big, 8}}, calls: []call{w("fd_pread", 0, 0, MaxIovecs, big, 8)}, same: true},
		{name: "fd_pread over the limit", call: call{"fd_pread", []uint64{0, 0, MaxIovecs + 1, big, 8}}, want: 28},
		{name: "path_open at the limit", call: call{"path_open", []uint64{3, 0, 0, MaxPathBytes, 0, big, big, 0, 8}},
			calls: []call{w("path_open", 3, 0, 0, MaxPathBytes, 0, big, big, 0, 8)}, same: true},
		{name: "path_open over the limit", call: call{"path_open", []uint64{3, 0, 0, MaxPathBytes + 1, 0, big, big, 0, 8}}, want: 37},
		{name: "path_symlink old path over the limit", call: call{"path_symlink", []uint64{0, MaxPathBytes + 1, 3, 0, 1}}, want: 37},
		{name: "path_symlink new path over the limit", call: call{"path_symlink", []uint64{0, 1, 3, 0, MaxPathBytes + 1}}, want: 37},
		{name: "path_symlink within the limits", call: call{"path_symlink", []uint64{0, MaxPathBytes, 3, 0, MaxPathBytes}},
			calls: []call{w("path_symlink", 0, MaxPathBytes, 3, 0, MaxPathBytes)}, same: true},
		{name: "another module's random_get is not guarded", call: call{"other", []uint64{0, 1 << 30}},
			calls: []call{{fn: "other.random_get", args: []uint64{0, 1 << 30}}}, same: true},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, m := range []struct {
				name string
				wasm []byte
			}{{"rewritten", out}, {"original", orig}} {
				if m.name == "original" && !tt.same {
					continue
				}
				rt := newRuntime(t)
				rec := &wasiRecorder{failAt: tt.failAt}
				rec.install(t, rt, "wasi_snapshot_preview1", wasiNames)
				rec.install(t, rt, "other", map[string][]api.ValueType{"random_get": {i32, i32}})
				mod, err := rt.Instantiate(ctx, m.wasm)
				require.NoError(t, err, m.name)
				res, err := mod.ExportedFunction(tt.call.fn).Call(ctx, tt.call.args...)
				require.NoError(t, err, m.name)
				assert.Equal(t, tt.want, res[0], "%s: errno", m.name)
				assert.Equal(t, tt.calls, rec.calls, "%s: the calls that reached the imports", m.name)
			}
		})
	}
}

// A random_get over many chunks stops at the first chunk after the
// interrupt word is set: the word is tested between chunks.
func TestWASIGuardRandomGetStops(t *testing.T) {
	const chunk = 4096
	out := mustRewrite(t, assemble(t, "wasi-guard.wat"), Options{ChunkBytes: chunk})
	ctx := context.Background()
	rt := newRuntime(t)
	var word, countdown api.MutableGlobal
	rec := &wasiRecorder{}
	rec.onCall = func(api.Module) {
		if len(rec.calls) == 2 {
			word.Set(1)
			countdown.Set(0)
		}
	}
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	rec.install(t, rt, "wasi_snapshot_preview1", map[string][]api.ValueType{
		"random_get": {i32, i32}, "poll_oneoff": {i32, i32, i32, i32}, "fd_write": {i32, i32, i32, i32},
		"fd_pread": {i32, i32, i32, i64, i32}, "path_open": {i32, i32, i32, i32, i32, i64, i64, i32, i32},
		"path_symlink": {i32, i32, i32, i32, i32},
	})
	rec.install(t, rt, "other", map[string][]api.ValueType{"random_get": {i32, i32}})
	mod, err := rt.Instantiate(ctx, out)
	require.NoError(t, err)
	word = mod.ExportedGlobal(InterruptExport).(api.MutableGlobal)
	countdown = mod.ExportedGlobal(CountdownExport).(api.MutableGlobal)
	_, err = mod.ExportedFunction("random_get").Call(ctx, 0, 30*chunk)
	require.Error(t, err, "the guest traps once the word is set")
	assert.ErrorContains(t, err, "unreachable")
	assert.Len(t, rec.calls, 2, "no chunk after the word was set")
}
