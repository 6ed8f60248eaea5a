package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/engine/wasmrt"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// TestInspectAgreesWithCompile: Inspect and Compile apply one shape rule on
// one runtime (the one this binary is built with: run with -tags
// gatehost_wazy for the other). For every hostile module, every shape
// module and every built-in gate, Inspect's first problem is Compile's
// refusal, word for word, and a module Inspect finds no problem with
// compiles.
func TestInspectAgreesWithCompile(t *testing.T) {
	root, err := testwasm.Root()
	require.NoError(t, err)
	var srcs []string
	for _, dir := range []string{"testdata/hostile", "testdata/shape"} {
		names, err := filepath.Glob(filepath.Join(root, dir, "*.wat"))
		require.NoError(t, err)
		require.NotEmpty(t, names, dir)
		for _, n := range names {
			srcs = append(srcs, filepath.Join(dir, filepath.Base(n)))
		}
	}
	mods := map[string][]byte{}
	for _, src := range srcs {
		mods[src] = wat(t, src)
	}
	// The built-in gates are megabytes of Go-compiled code: under the race
	// detector each compile takes minutes on a loaded machine, so they are
	// held to the rule by the plain runs (make test runs this test without
	// -race on both runtimes).
	gates := 0
	if !raceEnabled {
		for _, gate := range []string{"static-verify", "exec", "merge", "preconditions"} {
			path, err := testwasm.Go("plugins/" + gate + "/wasm")
			require.NoError(t, err)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			mods["plugins/"+gate] = b
			gates++
		}
	}
	// The engine may hold every memory the spec allows, as Inspect does,
	// so that only the shape rule can refuse.
	e := newTestEngine(t, Options{MemoryLimitPages: 65536})
	ctx := context.Background()
	var refused, compiled int
	for name, wasm := range mods {
		t.Run(name, func(t *testing.T) {
			info, ierr := Inspect(ctx, wasm)
			m, cerr := e.Compile(ctx, wasm)
			if m != nil {
				defer m.Close(ctx)
			}
			switch {
			case ierr != nil:
				require.Error(t, cerr, "Inspect refused: %v", ierr)
				assert.Equal(t, cerr.Error(), ierr.Error())
				refused++
			case len(info.Problems) > 0:
				require.Error(t, cerr, "Inspect found %q", info.Problems)
				var le *LoadError
				require.ErrorAs(t, cerr, &le)
				assert.Equal(t, info.Problems[0], cerr.Error())
				refused++
			default:
				require.NoError(t, cerr)
				assert.Equal(t, m.MinPages, info.Memory.MinPages)
				_, init := findExport(info, abi.ExportInitialize)
				assert.Equal(t, init, m.initialize)
				compiled++
			}
		})
	}
	// The table exercises both outcomes, or it proves nothing.
	assert.GreaterOrEqual(t, refused, 8, "refused modules (%s)", wasmrt.Name)
	assert.GreaterOrEqual(t, compiled, 20+gates, "compiled modules (%s)", wasmrt.Name)
}

func findExport(info *Info, name string) (Func, bool) {
	for _, f := range info.Exports {
		if f.Name == name {
			return f, true
		}
	}
	return Func{}, false
}

// TestInspectListsEveryProblem: Inspect reports all of a module's shape
// problems, in the order Compile checks them.
func TestInspectListsEveryProblem(t *testing.T) {
	tests := []struct {
		src  string
		want []error // kinds, in order
		subs []string
	}{
		{"testdata/shape/many-problems.wat",
			[]error{ErrForbiddenImport, ErrForbiddenImport, ErrForbiddenImport, ErrMissingExport, ErrExportType, ErrExportType, ErrMissingExport},
			[]string{"function env.steal", "function gatehost_v1.not_a_host_function", "memory env.mem", "gate_alloc",
				"gate_describe has ()->(i32), want ()->(i64)", "_initialize must take and return nothing", "memory memory"}},
		{"testdata/shape/init-signature.wat", []error{ErrExportType}, []string{"_initialize must take and return nothing"}},
		{"testdata/shape/memory-imported.wat", []error{ErrForbiddenImport}, []string{"memory env.memory"}},
		{"testdata/shape/no-memory.wat", []error{ErrMissingExport}, []string{"memory memory"}},
		{"testdata/interrupt/exports-interrupt-name.wat", []error{ErrCompile}, []string{"interrupt rewrite: rewrite: unsupported module"}},
		{"testdata/hostile/bad-import.wat", []error{ErrForbiddenImport}, []string{"function env.steal"}},
		{"testdata/hostile/trap.wat", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			info, err := Inspect(context.Background(), wat(t, tt.src))
			require.NoError(t, err)
			require.Len(t, info.Problems, len(tt.want), "%q", info.Problems)
			for i, p := range info.Problems {
				assert.True(t, strings.HasPrefix(p, tt.want[i].Error()+": "), "%q is a %v", p, tt.want[i])
				assert.Contains(t, p, tt.subs[i])
			}
		})
	}
}

// TestInspectRefusesWhatCannotCompile: bytes that are not a module, and a
// module past a shape limit, are a *LoadError, not an Info.
func TestInspectRefusesWhatCannotCompile(t *testing.T) {
	for name, wasm := range map[string][]byte{
		"not wasm":  []byte("not wasm"),
		"truncated": []byte("\x00asm\x01\x00\x00\x00\x01\x05"),
		"bomb":      wat(t, "testdata/hostile/loop-nest-bomb.wat"),
	} {
		t.Run(name, func(t *testing.T) {
			info, err := Inspect(context.Background(), wasm)
			require.Error(t, err)
			assert.Nil(t, info)
			var le *LoadError
			assert.True(t, errors.As(err, &le), "%T", err)
		})
	}
}

// TestInspectAbandonedAtContextEnd: a done context ends Inspect with the
// engine's compile-deadline error.
func TestInspectAbandonedAtContextEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Inspect(ctx, wat(t, "testdata/hostile/trap.wat"))
	require.ErrorIs(t, err, ErrCompile)
	require.ErrorIs(t, err, context.Canceled)
}
