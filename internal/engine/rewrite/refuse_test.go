package rewrite

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRefusals(t *testing.T) {
	mem := sec(secMemory, 0x01, 0x00, 0x01)
	oneGlobal := sec(secGlobal, 0x01, valI32, 0x01, 0x41, 0x00, 0x0b)
	// body is a function body without locals; the instruction under test
	// starts at byte 1 of it.
	body := func(instr ...byte) []byte { return append([]byte{0x00}, instr...) }
	tests := []struct {
		name   string
		wasm   []byte
		want   error
		reason string
		// at, when set, is the expected offset counted back from the end of
		// the input (the function body is always last).
		fromEnd int
	}{
		{name: "empty input", wasm: nil, want: ErrMalformed, reason: "truncated"},
		{name: "truncated header", wasm: header[:6], want: ErrMalformed, reason: "truncated"},
		{name: "bad magic", wasm: []byte("\x00wasm\x01\x00\x00"), want: ErrMalformed, reason: "magic"},
		{name: "binary format version 2", wasm: []byte{0, 'a', 's', 'm', 2, 0, 0, 0}, want: ErrUnsupported, reason: "version"},
		{name: "section past the end", wasm: wasmOf([]byte{secType, 0x05, 0x01, 0x60}), want: ErrMalformed, reason: "truncated"},
		{name: "section size LEB too long", wasm: wasmOf([]byte{secType, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}), want: ErrMalformed, reason: "LEB128"},
		{name: "section size LEB wider than 32 bits", wasm: wasmOf([]byte{secType, 0xff, 0xff, 0xff, 0xff, 0x7f}), want: ErrMalformed, reason: "LEB128"},
		{name: "section size LEB cut short", wasm: wasmOf([]byte{secType, 0x80}), want: ErrMalformed, reason: "truncated"},
		{name: "vector count past the section", wasm: wasmOf(sec(secType, 0x05, 0x60)), want: ErrMalformed, reason: "count"},
		{name: "bytes past a section's content", wasm: wasmOf(sec(secType, 0x00, 0x00)), want: ErrMalformed, reason: "past its content"},
		{name: "sections out of order", wasm: wasmOf(sec(secFunction, 0x00), sec(secType, 0x00)), want: ErrMalformed, reason: "out of order"},
		{name: "section duplicated", wasm: wasmOf(sec(secType, 0x00), sec(secType, 0x00)), want: ErrMalformed, reason: "duplicated"},
		{name: "unknown section", wasm: wasmOf(sec(14)), want: ErrMalformed, reason: "unknown section"},
		{name: "tag section", wasm: wasmOf(sec(secTag, 0x00)), want: ErrUnsupported, reason: "tag"},
		{name: "GC type form", wasm: wasmOf(sec(secType, 0x01, 0x5f, 0x00)), want: ErrUnsupported, reason: "type form"},
		{name: "shared memory", wasm: wasmOf(sec(secMemory, 0x01, 0x03, 0x01, 0x01)), want: ErrUnsupported, reason: "shared"},
		{name: "memory64", wasm: wasmOf(sec(secMemory, 0x01, 0x04, 0x01)), want: ErrUnsupported, reason: "64-bit"},
		{name: "no memory", wasm: wasmOf(sec(secType, 0x00)), want: ErrUnsupported, reason: "no memory"},
		{name: "functions without bodies", wasm: wasmOf(sec(secType, 0x01, 0x60, 0x00, 0x00), sec(secFunction, 0x01, 0x00), mem), want: ErrMalformed, reason: "code section has 0"},
		{name: "function type index out of range", wasm: wasmOf(sec(secType, 0x00), sec(secFunction, 0x01, 0x00)), want: ErrMalformed, reason: "type index 0"},
		{name: "body without its final end", wasm: funcModule(body(0x01)), want: ErrMalformed, reason: "before its final end"},
		{name: "bytes past the final end", wasm: funcModule(body(0x0b, 0x01)), want: ErrMalformed, reason: "past its final end", fromEnd: 1},
		{name: "i32.const LEB too long", wasm: funcModule(body(0x41, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x1a, 0x0b)), want: ErrMalformed, reason: "LEB128", fromEnd: 8},
		{name: "i32.const LEB wider than 32 bits", wasm: funcModule(body(0x41, 0xff, 0xff, 0xff, 0xff, 0x4f, 0x1a, 0x0b)), want: ErrMalformed, reason: "wider", fromEnd: 7},
		{name: "i64.const LEB too long", wasm: funcModule(body(0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x1a, 0x0b)), want: ErrMalformed, reason: "LEB128"},
		{name: "local count LEB too long", wasm: funcModule([]byte{0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, valI32, 0x0b}), want: ErrMalformed, reason: "LEB128"},
		{name: "f64.const cut short", wasm: funcModule(body(0x44, 0x00, 0x00)), want: ErrMalformed, reason: "truncated"},
		{name: "threads prefix 0xfe", wasm: assemble(t, "refuse-atomic.wat"), want: ErrUnsupported, reason: "opcode 0xfe"},
		{name: "guarded WASI import in a table", wasm: assemble(t, "refuse-wasi-ref.wat"), want: ErrUnsupported, reason: "element segment of the WASI import random_get"},
		{name: "guarded WASI import exported", wasm: assemble(t, "refuse-wasi-export.wat"), want: ErrUnsupported, reason: "exported function of the WASI import poll_oneoff"},
		{name: "tail call", wasm: append(assemble(t, "refuse-tailcall.wat"), sec(secCustom, 0x00)...), want: ErrUnsupported, reason: "opcode 0x12"},
		{name: "exceptions try", wasm: funcModule(body(0x06, 0x40, 0x0b, 0x0b)), want: ErrUnsupported, reason: "opcode 0x06", fromEnd: 4},
		{name: "GC prefix 0xfb", wasm: funcModule(body(0xfb, 0x00, 0x0b)), want: ErrUnsupported, reason: "opcode 0xfb", fromEnd: 3},
		{name: "0xfc sub-opcode 18", wasm: funcModule(body(0xfc, 18, 0x0b)), want: ErrUnsupported, reason: "opcode 0xfc 18", fromEnd: 3},
		{name: "relaxed SIMD", wasm: funcModule(body(0xfd, 0x80, 0x02, 0x0b)), want: ErrUnsupported, reason: "opcode 0xfd 256", fromEnd: 4},
		{name: "unassigned SIMD opcode", wasm: funcModule(body(0xfd, 0x9a, 0x01, 0x0b)), want: ErrUnsupported, reason: "opcode 0xfd 154", fromEnd: 4},
		{name: "block type of a GC reference", wasm: funcModule(body(0x02, 0x63, 0x0b, 0x0b)), want: ErrUnsupported, reason: "block type", fromEnd: 3},
		{name: "block type index out of range", wasm: funcModule(body(0x02, 0x05, 0x0b, 0x0b)), want: ErrMalformed, reason: "type index 5", fromEnd: 3},
		{name: "multi-memory memarg", wasm: funcModule(body(0x41, 0x00, 0x28, 0x42, 0x01, 0x00, 0x1a, 0x0b)), want: ErrUnsupported, reason: "multi-memory"},
		{name: "multi-memory memory.copy", wasm: funcModule(body(0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 10, 0x00, 0x01, 0x0b)), want: ErrUnsupported, reason: "multi-memory", fromEnd: 2},
		{name: "global.set of the interrupt word", wasm: funcModule(body(0x41, 0x01, 0x24, 0x01, 0x0b), oneGlobal), want: ErrMalformed, reason: "global.set: global index 1", fromEnd: 2},
		{name: "global.set of the countdown", wasm: funcModule(body(0x41, 0x01, 0x24, 0x02, 0x0b), oneGlobal), want: ErrMalformed, reason: "global.set: global index 2", fromEnd: 2},
		{name: "global.set without globals", wasm: funcModule(body(0x41, 0x01, 0x24, 0x00, 0x0b)), want: ErrMalformed, reason: "global.set: global index 0", fromEnd: 2},
		{name: "global.get of the interrupt word", wasm: funcModule(body(0x23, 0x01, 0x1a, 0x0b), oneGlobal), want: ErrMalformed, reason: "global.get: global index 1", fromEnd: 3},
		{name: "call of an appended function", wasm: funcModule(body(0x10, 0x01, 0x0b)), want: ErrMalformed, reason: "call: function index 1", fromEnd: 2},
		{name: "ref.func of an appended function", wasm: funcModule(body(0xd2, 0x01, 0x1a, 0x0b)), want: ErrMalformed, reason: "ref.func: function index 1", fromEnd: 3},
		{name: "call_indirect of an appended type", wasm: funcModule(body(0x41, 0x00, 0x11, 0x01, 0x00, 0x0b)), want: ErrMalformed, reason: "call_indirect: type index 1", fromEnd: 3},
		{name: "export of the interrupt word's index", wasm: funcModule(body(0x0b), oneGlobal, sec(secExport, 0x01, 0x01, 'g', 0x03, 0x01)), want: ErrMalformed, reason: "exported global: global index 1"},
		{name: "start of an appended function", wasm: funcModule(body(0x0b), sec(secStart, 0x01)), want: ErrMalformed, reason: "start function: function index 1"},
		{name: "element segment naming an appended function", wasm: funcModule(body(0x0b), sec(secTable, 0x01, valFuncref, 0x00, 0x01), sec(secElement, 0x01, 0x00, 0x41, 0x00, 0x0b, 0x01, 0x01)), want: ErrMalformed, reason: "element segment: function index 1"},
		{name: "data offset reading the interrupt word", wasm: append(funcModule(body(0x0b), oneGlobal), sec(secData, 0x01, 0x00, 0x23, 0x01, 0x0b, 0x00)...), want: ErrMalformed, reason: "global index 1"},
		{name: "already exports gatehost_interrupt", wasm: assemble(t, "refuse-export.wat"), want: ErrUnsupported, reason: `"gatehost_interrupt"`},
		{name: "already exports gatehost_countdown", wasm: funcModule(body(0x0b), oneGlobal, sec(secExport, append([]byte{0x01, byte(len(CountdownExport))}, append([]byte(CountdownExport), 0x03, 0x00)...)...)), want: ErrUnsupported, reason: `"gatehost_countdown"`},
		{name: "memory.copy without memory", wasm: wasmOf(sec(secType, 0x01, 0x60, 0x00, 0x00), sec(secFunction, 0x01, 0x00), sec(secCode, 0x01, 0x0c, 0x00, 0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 10, 0, 0, 0x0b)), want: ErrMalformed, reason: "no memory", fromEnd: 5},
		{name: "memory.fill without memory", wasm: wasmOf(sec(secType, 0x01, 0x60, 0x00, 0x00), sec(secFunction, 0x01, 0x00), sec(secCode, 0x01, 0x0b, 0x00, 0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 11, 0, 0x0b)), want: ErrMalformed, reason: "no memory", fromEnd: 4},
		{name: "invalid UTF-8 export name", wasm: funcModule(body(0x0b), sec(secExport, 0x01, 0x01, 0xff, 0x00, 0x00)), want: ErrMalformed, reason: "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Module(tt.wasm, Options{})
			require.Error(t, err)
			assert.Nil(t, out)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.ErrorIs(t, err, tt.want)
			assert.Contains(t, e.Reason, tt.reason)
			assert.Contains(t, e.Error(), tt.reason)
			assert.GreaterOrEqual(t, e.Offset, 0)
			assert.LessOrEqual(t, e.Offset, len(tt.wasm))
			if tt.fromEnd != 0 {
				assert.Equal(t, len(tt.wasm)-tt.fromEnd, e.Offset, "offset")
			}
		})
	}
}

// Every prefix of a module is refused as malformed or, cut at a section
// boundary, rewritten or refused for having no memory; never a panic.
func TestTruncatedEverywhere(t *testing.T) {
	full := assemble(t, "behaviour.wat")
	boundaries := map[int]bool{}
	for n := 0; n < len(full); n++ {
		out, err := Module(full[:n], Options{})
		if err == nil {
			boundaries[n] = true
			require.NotEmpty(t, out)
			continue
		}
		var e *Error
		require.ErrorAs(t, err, &e, "prefix %d", n)
		if errors.Is(err, ErrUnsupported) {
			require.Contains(t, e.Reason, "no memory", "prefix %d", n)
			boundaries[n] = true
			continue
		}
		require.ErrorIs(t, err, ErrMalformed, "prefix %d: %v", n, err)
		require.LessOrEqual(t, e.Offset, n, "prefix %d", n)
	}
	// Only the prefixes ending at a section boundary are modules.
	assert.Less(t, len(boundaries), 12, "prefixes accepted: %v", boundaries)
}

func TestErrorIsAndUnwrap(t *testing.T) {
	e := &Error{Offset: 3, Reason: "x", Err: ErrUnsupported}
	assert.Equal(t, ErrUnsupported, errors.Unwrap(e))
	assert.True(t, errors.Is(e, ErrUnsupported))
	assert.False(t, errors.Is(e, ErrMalformed))
	assert.Equal(t, "rewrite: unsupported module at byte 3: x", e.Error())
}
