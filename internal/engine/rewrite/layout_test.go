package rewrite

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The appended sections land at their place in the section order, custom
// sections and unchanged sections are copied byte for byte, existing
// identical types are reused, the output is deterministic and a rewritten
// module is not rewritten again.
func TestLayout(t *testing.T) {
	mem := sec(secMemory, 0x01, 0x00, 0x01)
	custom := func(name string) []byte { return sec(secCustom, append([]byte{byte(len(name))}, name...)...) }
	voidT := []byte{0x60, 0x00, 0x00}
	bulkT := []byte{0x60, 0x03, valI32, valI32, valI32, 0x00}
	// fill's length is memory.size, known only when it runs: the helper.
	fill := []byte{0x00, 0x41, 0, 0x41, 0, 0x3f, 0, 0xfc, 11, 0, 0x0b}
	// A length the i32.const right before gives, however small, goes to
	// the helper too: the helper tests the interrupt word, and a body of
	// inline fills would have none to pass.
	fill8 := []byte{0x00, 0x41, 0, 0x41, 0, 0x41, 8, 0xfc, 11, 0, 0x0b}
	copy8 := []byte{0x00, 0x41, 0, 0x41, 0, 0x41, 8, 0xfc, 10, 0, 0, 0x0b}
	code := func(body []byte) []byte {
		return sec(secCode, append(appendULEB([]byte{0x01}, uint64(len(body))), body...)...)
	}
	tests := []struct {
		name      string
		wasm      []byte
		types     uint32 // type count after the rewrite
		funcs     uint32 // defined functions after the rewrite
		globals   uint32
		exports   uint32
		keepWhole [][]byte // sections that must appear unchanged
	}{
		{name: "memory only", wasm: wasmOf(custom("a"), mem, custom("b")),
			types: 0, funcs: 0, globals: 2, exports: 2, keepWhole: [][]byte{custom("a"), custom("b"), mem}},
		{name: "one function", wasm: wasmOf(sec(secType, append([]byte{0x01}, voidT...)...), sec(secFunction, 0x01, 0x00), mem, code([]byte{0x00, 0x0b})),
			types: 1, funcs: 1, globals: 2, exports: 2, keepWhole: [][]byte{mem}},
		{name: "fill appends the bulk type", wasm: wasmOf(sec(secType, append([]byte{0x01}, voidT...)...), sec(secFunction, 0x01, 0x00), mem, custom("between"), code(fill)),
			types: 2, funcs: 2, globals: 2, exports: 2, keepWhole: [][]byte{custom("between")}},
		{name: "constant fill", wasm: wasmOf(sec(secType, append([]byte{0x01}, voidT...)...), sec(secFunction, 0x01, 0x00), mem, code(fill8)),
			types: 2, funcs: 2, globals: 2, exports: 2},
		{name: "constant copy", wasm: wasmOf(sec(secType, append([]byte{0x01}, voidT...)...), sec(secFunction, 0x01, 0x00), mem, code(copy8)),
			types: 2, funcs: 2, globals: 2, exports: 2},
		{name: "bulk type reused", wasm: wasmOf(sec(secType, append(append([]byte{0x02}, bulkT...), voidT...)...), sec(secFunction, 0x01, 0x01), mem, code(fill)),
			types: 2, funcs: 2, globals: 2, exports: 2},
		{name: "existing globals and exports", wasm: wasmOf(sec(secType, append([]byte{0x01}, voidT...)...), sec(secFunction, 0x01, 0x00), mem,
			sec(secGlobal, 0x01, valI64, 0x00, 0x42, 0x07, 0x0b), sec(secExport, 0x01, 0x01, 'f', 0x00, 0x00), custom("z"), code([]byte{0x00, 0x0b}), sec(secData, 0x00)),
			types: 1, funcs: 1, globals: 3, exports: 3, keepWhole: [][]byte{custom("z"), sec(secData, 0x00)}},
	}
	ctx := context.Background()
	rt := newRuntime(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := mustRewrite(t, tt.wasm, Options{})
			again := mustRewrite(t, tt.wasm, Options{})
			assert.Equal(t, out, again, "deterministic")
			secs := sections(t, out)
			count := func(id byte) uint32 {
				if len(secs[id]) == 0 {
					return 0
				}
				return vecCount(t, secs[id][0])
			}
			assert.Equal(t, tt.types, count(secType), "types")
			assert.Equal(t, tt.funcs, count(secFunction), "functions")
			assert.Equal(t, tt.funcs, count(secCode), "bodies")
			assert.Equal(t, tt.globals, count(secGlobal), "globals")
			assert.Equal(t, tt.exports, count(secExport), "exports")
			for _, keep := range tt.keepWhole {
				assert.True(t, bytes.Contains(out, keep), "section % x copied unchanged", keep)
			}
			cm, err := rt.CompileModule(ctx, out)
			require.NoError(t, err, "wazero compiles the output (section order, sizes)")
			require.NoError(t, cm.Close(ctx))
			_, err = Module(out, Options{})
			require.ErrorIs(t, err, ErrUnsupported, "a rewritten module is not rewritten twice")
		})
	}
}

// A body's entry test is left out only where its first loop's header test
// runs first on every call: the code before that loop neither branches,
// calls nor traps (the shape of every function Go compiles). Counted in
// the output: the tests of the one body.
func TestEntryTestLeftOutBeforeALoop(t *testing.T) {
	tests := []struct {
		name  string
		body  []byte // locals and expression
		tests int
	}{
		{"loop first", []byte{0x00, 0x03, 0x40, 0x0b, 0x0b}, 1},
		{"Go's prologue: locals, globals, blocks, then the loop", []byte{0x01, 0x01, valI32, 0x41, 0x00, 0x21, 0x00, 0x02, 0x40, 0x03, 0x40, 0x0b, 0x0b, 0x0b}, 1},
		{"no loop", []byte{0x00, 0x0b}, 1},
		{"a drop before the loop", []byte{0x00, 0x41, 0x00, 0x1a, 0x03, 0x40, 0x0b, 0x0b}, 2},
		{"a branch before the loop", []byte{0x00, 0x02, 0x40, 0x0c, 0x00, 0x0b, 0x03, 0x40, 0x0b, 0x0b}, 2},
		{"an if before the loop", []byte{0x00, 0x41, 0x00, 0x04, 0x40, 0x0b, 0x03, 0x40, 0x0b, 0x0b}, 2},
		{"a call before the loop", []byte{0x00, 0x10, 0x00, 0x03, 0x40, 0x0b, 0x0b}, 3}, // entry, after the call, loop
		{"a load before the loop (it can trap)", []byte{0x00, 0x41, 0x00, 0x28, 0x02, 0x00, 0x1a, 0x03, 0x40, 0x0b, 0x0b}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := mustRewrite(t, funcModule(tt.body), Options{})
			code := sections(t, out)[secCode][0]
			assert.Equal(t, tt.tests, bytes.Count(code, check(nil, indices{interrupt: 0, countdown: 1})))
		})
	}
}
