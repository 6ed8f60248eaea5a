package rewrite

import (
	"context"
	"crypto/sha256"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

type call struct {
	fn   string
	args []uint64
}

// outcome is what a sequence of calls did: each call's results or trap,
// and the memory afterwards.
type outcome struct {
	results [][]uint64
	traps   []bool
	memory  [32]byte
}

func run(t *testing.T, rt wazero.Runtime, cm wazero.CompiledModule, calls []call) outcome {
	t.Helper()
	ctx := context.Background()
	mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
	require.NoError(t, err)
	defer mod.Close(ctx)
	var o outcome
	for _, c := range calls {
		f := mod.ExportedFunction(c.fn)
		require.NotNil(t, f, c.fn)
		res, err := f.Call(ctx, c.args...)
		o.results = append(o.results, res)
		o.traps = append(o.traps, err != nil)
	}
	mem := mod.ExportedMemory("memory")
	b, ok := mem.Read(0, mem.Size())
	require.True(t, ok)
	o.memory = sha256.Sum256(b)
	return o
}

func TestBehaviourUnchanged(t *testing.T) {
	orig := assemble(t, "behaviour.wat")
	const page = 65536
	init := call{fn: "init"}
	cp := func(d, s, n uint64) call { return call{"copy", []uint64{d, s, n}} }
	fill := func(d, v, n uint64) call { return call{"fill", []uint64{d, v, n}} }
	tests := []struct {
		name  string
		calls []call
		traps bool // the last call traps, in the original as in the rewrite
	}{
		{name: "loop sum 0", calls: []call{{"sum", []uint64{0}}}},
		{name: "loop sum 100000", calls: []call{{"sum", []uint64{100000}}}},
		{name: "loop with params", calls: []call{{"countdown", []uint64{7}}}},
		{name: "nested loops", calls: []call{{"nested", []uint64{60}}}},
		{name: "recursion", calls: []call{{"fact", []uint64{20}}}},
		{name: "call tree", calls: []call{{"fib", []uint64{22}}}},
		{name: "br_table", calls: []call{{"switch", []uint64{0}}, {"switch", []uint64{1}}, {"switch", []uint64{2}}, {"switch", []uint64{3}}, {"switch", []uint64{9}}}},
		{name: "call_indirect", calls: []call{{"dispatch", []uint64{0, 7, 3}}, {"dispatch", []uint64{1, 7, 3}}, {"dispatch", []uint64{2, 7, 3}}}},
		{name: "call_indirect out of the table", calls: []call{{"dispatch", []uint64{3, 7, 3}}}, traps: true},
		{name: "sign extension", calls: []call{{"signext", []uint64{0x8081}}, {"signext", []uint64{0x7f}}}},
		{name: "saturating truncation", calls: []call{{"satconv", []uint64{math.Float64bits(1e20)}}, {"satconv", []uint64{math.Float64bits(math.NaN())}}, {"satconv", []uint64{math.Float64bits(-3.7)}}}},
		{name: "reference types", calls: []call{{"refs", nil}, {"typedselect", []uint64{0}}, {"typedselect", []uint64{1}}}},
		{name: "simd", calls: []call{{"simd", []uint64{5}}}},
		{name: "copy forward, disjoint", calls: []call{init, cp(0, 1000, 500)}},
		{name: "copy backward overlap (dst > src)", calls: []call{init, cp(10, 0, 40000)}},
		{name: "copy forward overlap (dst < src)", calls: []call{init, cp(0, 10, 40000)}},
		{name: "copy onto itself", calls: []call{init, cp(5, 5, 100)}},
		{name: "copy whole memory by one", calls: []call{init, cp(1, 0, page-1)}},
		{name: "copy empty at the end", calls: []call{init, cp(page, page, 0)}},
		{name: "copy empty past the end", calls: []call{init, cp(page+1, 0, 0)}, traps: true},
		{name: "copy dst out of bounds", calls: []call{init, cp(65000, 0, 1000)}, traps: true},
		{name: "copy src out of bounds", calls: []call{init, cp(0, 65000, 1000)}, traps: true},
		{name: "copy length wraps i32", calls: []call{init, cp(16, 0, math.MaxUint32)}, traps: true},
		{name: "copy dst wraps i32", calls: []call{init, cp(0xfffffff0, 0, 0x20)}, traps: true},
		{name: "fill whole memory", calls: []call{init, fill(0, 0x11, page)}},
		{name: "fill middle", calls: []call{init, fill(100, 0x22, 12345)}},
		{name: "fill empty at the end", calls: []call{init, fill(page, 1, 0)}},
		{name: "fill empty past the end", calls: []call{init, fill(page+1, 1, 0)}, traps: true},
		{name: "fill out of bounds", calls: []call{init, fill(65000, 1, 1000)}, traps: true},
		{name: "fill wraps i32", calls: []call{init, fill(math.MaxUint32, 1, 2)}, traps: true},
		{name: "constant copy", calls: []call{init, {"copy16", []uint64{0, 100}}}},
		{name: "constant copy overlapping", calls: []call{init, {"copy16", []uint64{10, 2}}}},
		{name: "constant copy to the end", calls: []call{init, {"copy16", []uint64{page - 16, 0}}}},
		{name: "constant copy past the end", calls: []call{init, {"copy16", []uint64{page - 15, 0}}}, traps: true},
		{name: "constant copy src wraps i32", calls: []call{init, {"copy16", []uint64{0, 0xfffffff8}}}, traps: true},
		{name: "constant fill", calls: []call{init, {"fill16", []uint64{300, 0x33}}}},
		{name: "constant fill past the end", calls: []call{init, {"fill16", []uint64{page - 8, 0x33}}}, traps: true},
		{name: "copy then fill in one body", calls: []call{init, {"copyfill", []uint64{10, 2000, 3000}}}},
		{name: "copy across grown memory", calls: []call{init, {"grow", []uint64{1}}, cp(page+5, 0, page-5)}},
	}
	ctx := context.Background()
	rt := newRuntime(t)
	origCM, err := rt.CompileModule(ctx, orig)
	require.NoError(t, err)
	variants := map[string]wazero.CompiledModule{}
	for _, chunk := range []uint32{0, 1, 3, 4096, 65535} {
		cm, err := rt.CompileModule(ctx, mustRewrite(t, orig, Options{ChunkBytes: chunk}))
		require.NoError(t, err)
		variants[map[uint32]string{0: "default chunk", 1: "chunk 1", 3: "chunk 3", 4096: "chunk 4096", 65535: "chunk 65535"}[chunk]] = cm
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := run(t, rt, origCM, tt.calls)
			require.Equal(t, tt.traps, want.traps[len(want.traps)-1], "the original's last call")
			for i, trapped := range want.traps[:len(want.traps)-1] {
				require.False(t, trapped, "the original's call %d", i)
			}
			for name, cm := range variants {
				got := run(t, rt, cm, tt.calls)
				assert.Equal(t, want, got, name)
			}
		})
	}
}

// The interrupt word and the countdown are exported, mutable and i32, 0
// and SafepointEvery after instantiation. The word set and the countdown
// zeroed, a call traps at its entry; the word set alone (the countdown
// left as a racing decrement could leave it), within SafepointEvery
// tests; the word cleared, calls work again.
func TestInterruptGlobalsExported(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	mod, err := rt.Instantiate(ctx, mustRewrite(t, assemble(t, "behaviour.wat"), Options{}))
	require.NoError(t, err)
	globals := map[string]api.MutableGlobal{}
	for name, initial := range map[string]uint64{InterruptExport: 0, CountdownExport: SafepointEvery} {
		g, ok := mod.ExportedGlobal(name).(api.MutableGlobal)
		require.True(t, ok, "%s is an exported mutable global", name)
		assert.Equal(t, api.ValueTypeI32, g.Type(), name)
		assert.Equal(t, initial, g.Get(), name)
		globals[name] = g
	}
	word, countdown := globals[InterruptExport], globals[CountdownExport]

	word.Set(1)
	countdown.Set(0)
	_, err = mod.ExportedFunction("fact").Call(ctx, 5)
	require.ErrorContains(t, err, "unreachable")

	countdown.Set(SafepointEvery)
	calls := 0
	for ; calls <= SafepointEvery; calls++ {
		if _, err = mod.ExportedFunction("fact").Call(ctx, 1); err != nil {
			break
		}
	}
	require.ErrorContains(t, err, "unreachable", "the word alone stops the guest")
	assert.Less(t, calls, SafepointEvery, "within SafepointEvery tests (each call makes at least one)")

	word.Set(0)
	res, err := mod.ExportedFunction("fact").Call(ctx, 5)
	require.NoError(t, err)
	assert.Equal(t, []uint64{120}, res)
}
