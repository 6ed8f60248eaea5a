package engine

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckShapeRefusals(t *testing.T) {
	small := Limits{ModuleBytes: 4096, Functions: 3, FunctionBytes: 512, Nesting: 8, LoopNesting: 2,
		Locals: 16, LocalBlocks: 40, TotalLocalBlocks: 60, TotalDepth: 40, Blocks: 12, TotalBlocksSquared: 150}
	simd := []byte{0xfd, 0x0c}
	simd = append(simd, make([]byte, 16)...) // v128.const
	simd = append(simd, 0x1a)                // drop
	cases := []struct {
		name  string
		wasm  []byte
		limit string // "" means accepted
		want  Shape
	}{
		{name: "plain function", wasm: genModule(fn{body: []byte{0x01}}),
			want: Shape{Functions: 1, FunctionBytes: 3}},
		{name: "nesting at the limit", wasm: genModule(fn{body: nest(0x02, 8)}),
			want: Shape{Functions: 1, FunctionBytes: 26, Nesting: 8, TotalDepth: 36, Blocks: 8, TotalBlocksSquared: 64}},
		{name: "nesting over the limit", wasm: genModule(fn{body: nest(0x02, 9)}), limit: "compile_limits.nesting: 9"},
		{name: "if nesting counts", wasm: genModule(fn{body: bytes.Repeat([]byte{0x41, 0x00, 0x04, 0x40}, 9)}), limit: "compile_limits.nesting"},
		{name: "loop nesting over the limit", wasm: genModule(fn{body: nest(0x03, 3)}), limit: "compile_limits.loop_nesting: 3"},
		{name: "loops in sequence are not nested", wasm: genModule(fn{body: bytes.Repeat(nest(0x03, 2), 3)}),
			want: Shape{Functions: 1, FunctionBytes: 20, Nesting: 2, LoopNesting: 2, TotalDepth: 9, Blocks: 6, TotalBlocksSquared: 36}},
		{name: "declared locals over the limit", wasm: genModule(fn{locals: 17}), limit: "compile_limits.locals: 17"},
		{name: "parameters count as locals", wasm: genModule(fn{params: 10, locals: 7}), limit: "compile_limits.locals: 17"},
		{name: "locals times blocks", wasm: genModule(fn{locals: 10, body: ifs(5, 10)}), limit: "compile_limits.local_blocks: 50"},
		{name: "locals times blocks summed", wasm: genModule(fn{locals: 10, body: ifs(4, 10)}, fn{locals: 10, body: ifs(3, 10)}),
			limit: "compile_limits.total_local_blocks: 70"},
		{name: "depth summed over functions", wasm: genModule(fn{body: nest(0x02, 8)}, fn{body: nest(0x02, 3)}),
			limit: "compile_limits.total_depth: 42"},
		{name: "blocks in sequence", wasm: genModule(fn{locals: 1, body: ifs(13, 1)}), limit: "compile_limits.blocks: 13"},
		{name: "blocks squared summed", wasm: genModule(fn{locals: 1, body: ifs(10, 1)}, fn{locals: 1, body: ifs(8, 1)}),
			limit: "compile_limits.total_blocks_squared: 164"},
		{name: "too many functions", wasm: genModule(fn{}, fn{}, fn{}, fn{}), limit: "compile_limits.functions: 4"},
		{name: "function body too large", wasm: genModule(fn{body: bytes.Repeat([]byte{0x01}, 600)}), limit: "compile_limits.function_bytes"},
		{name: "module too large", wasm: append(genModule(fn{}), section(0, make([]byte, 5000))...), limit: "compile_limits.module_bytes"},
		{name: "SIMD immediates are skipped", wasm: genModule(fn{body: simd}), want: Shape{Functions: 1, FunctionBytes: 21}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := CheckShape(c.wasm, small)
			if c.limit == "" {
				require.NoError(t, err)
				c.want.Bytes = len(c.wasm)
				assert.Equal(t, c.want, s)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrTooComplex)
			assert.NotErrorIs(t, err, ErrMalformed)
			var le *LoadError
			require.ErrorAs(t, err, &le)
			assert.Contains(t, err.Error(), c.limit)
		})
	}
}

func TestCheckShapeMalformed(t *testing.T) {
	good := genModule(fn{body: []byte{0x41, 0x05, 0x1a}})
	cases := map[string][]byte{
		"empty":                 nil,
		"not wasm":              []byte("not a module"),
		"wrong version":         []byte("\x00asm\x02\x00\x00\x00"),
		"section past the end":  append([]byte("\x00asm\x01\x00\x00\x00"), 10, 0x7f),
		"truncated module":      good[:len(good)-2],
		"body without end":      genModuleRaw([]byte{0, 0x01}),
		"code after end":        genModuleRaw([]byte{0, 0x0b, 0x01}),
		"unknown opcode":        genModuleRaw([]byte{0, 0x06, 0x0b}),
		"unknown 0xfc":          genModuleRaw([]byte{0, 0xfc, 0x20, 0x0b}),
		"LEB too long":          genModuleRaw([]byte{0, 0x0c, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x0b}),
		"truncated immediate":   genModuleRaw([]byte{0, 0x44, 0x00}),
		"block type past end":   genModuleRaw([]byte{0, 0x02}),
		"br_table past the end": genModuleRaw([]byte{0, 0x0e, 0x7f, 0x00}),
	}
	for name, wasm := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := CheckShape(wasm, Limits{})
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrMalformed)
			assert.ErrorIs(t, err, ErrCompile, "a malformed module is one that does not compile")
		})
	}
}

// genModuleRaw returns a module with one function whose code entry is body
// (locals and instructions, as given).
func genModuleRaw(body []byte) []byte {
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, section(1, []byte{1, 0x60, 0, 0})...)
	m = append(m, section(3, []byte{1, 0})...)
	code := append([]byte{1}, uleb(uint64(len(body)))...)
	return append(m, section(10, append(code, body...))...)
}

// TestCheckShapeRealGates: the built-in gates pass the default limits
// with a wide margin (the figures of DefaultLimits' comment).
func TestCheckShapeRealGates(t *testing.T) {
	for _, name := range []string{"static-verify", "exec", "merge", "preconditions"} {
		t.Run(name, func(t *testing.T) {
			wasm, err := os.ReadFile("../../build/plugins/" + name + ".wasm")
			if errors.Is(err, os.ErrNotExist) {
				t.Skip("run make build first")
			}
			require.NoError(t, err)
			s, err := CheckShape(wasm, Limits{})
			require.NoError(t, err)
			t.Logf("%s: %+v", name, s)
			d := DefaultLimits
			assert.Less(t, s.Nesting*4, d.Nesting)
			assert.Less(t, s.LocalBlocks*10, d.LocalBlocks)
			assert.Less(t, s.TotalLocalBlocks*8, d.TotalLocalBlocks)
			assert.Less(t, s.TotalDepth*10, d.TotalDepth)
			assert.Less(t, s.Bytes*10, d.ModuleBytes)
		})
	}
}

// TestCompileRefusesBeforeCompiling: the generated bombs are refused by
// the shape check, naming the limit, before the runtime sees them.
func TestCompileRefusesBeforeCompiling(t *testing.T) {
	e := newTestEngine(t, Options{})
	cases := map[string]struct {
		wasm  []byte
		limit string
	}{
		"40,000 nested blocks":    {genModule(fn{body: nest(0x02, 40_000)}), "compile_limits.nesting"},
		"200 nested loops":        {genModule(fn{body: nest(0x03, 200)}), "compile_limits.loop_nesting"},
		"2,000 locals x 600 ifs":  {genModule(fn{locals: 2000, body: ifs(600, 2000)}), "compile_limits.local_blocks"},
		"many functions at limit": {genModule(repeatFn(fn{locals: 1000, body: ifs(900, 1000)}, 10)...), "compile_limits.total_local_blocks"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := e.Compile(context.Background(), c.wasm)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrTooComplex)
			assert.Contains(t, err.Error(), c.limit)
		})
	}
}

func repeatFn(f fn, n int) []fn {
	fns := make([]fn, n)
	for i := range fns {
		fns[i] = f
	}
	return fns
}

func FuzzCheckShape(f *testing.F) {
	f.Add(genModule(fn{body: nest(0x02, 3)}))
	f.Add(genModule(fn{params: 2, locals: 3, body: ifs(4, 3)}))
	f.Add(genModuleRaw([]byte{0, 0x0e, 0x02, 0x00, 0x00, 0x00, 0x0b}))
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		s, err := CheckShape(wasm, Limits{Nesting: 64, TotalDepth: 1 << 12})
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) || !(errors.Is(err, ErrTooComplex) || errors.Is(err, ErrMalformed)) {
				t.Fatalf("error of the wrong kind: %v", err)
			}
			return
		}
		if s.Nesting > 64 || s.TotalDepth > 1<<12 || s.Bytes != len(wasm) {
			t.Fatalf("accepted over a limit: %+v", s)
		}
	})
}
