package rewrite

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
)

// validator compiles with wazero's interpreter: the same validation as the
// compiler, at a fraction of the cost.
var validator = sync.OnceValue(func() wazero.Runtime {
	return wazero.NewRuntimeWithConfig(context.Background(), wazero.NewRuntimeConfigInterpreter())
})

func compiles(wasm []byte) bool {
	ctx := context.Background()
	cm, err := validator().CompileModule(ctx, wasm)
	if err != nil {
		return false
	}
	_ = cm.Close(ctx)
	return true
}

// checkRewrite is the property FuzzModule tests on any input: a refusal is
// an *Error with a sentinel and an offset inside the input; an output is
// deterministic, and wazero accepts it exactly when it accepted the input
// (the rewrite neither breaks a valid module nor makes an invalid one
// valid).
func checkRewrite(t *testing.T, in []byte) {
	out, err := Module(in, Options{ChunkBytes: 3})
	if err != nil {
		var e *Error
		require.ErrorAs(t, err, &e)
		require.True(t, errors.Is(err, ErrMalformed) || errors.Is(err, ErrUnsupported), "sentinel: %v", err)
		require.GreaterOrEqual(t, e.Offset, 0)
		require.LessOrEqual(t, e.Offset, len(in))
		return
	}
	again, err := Module(in, Options{ChunkBytes: 3})
	require.NoError(t, err)
	require.True(t, bytes.Equal(out, again), "deterministic")
	require.Equal(t, compiles(in), compiles(out), "wazero accepts the output exactly when it accepts the input")
}

// seeds are the test modules; refused are those the rewrite must refuse
// (testdata/refuse-*.wat).
func seeds(tb testing.TB) (accepted, refused [][]byte) {
	tb.Helper()
	wats, err := filepath.Glob(filepath.Join("testdata", "*.wat"))
	require.NoError(tb, err)
	for _, w := range wats {
		if strings.HasPrefix(filepath.Base(w), "refuse-") {
			refused = append(refused, assemble(tb, filepath.Base(w)))
		} else {
			accepted = append(accepted, assemble(tb, filepath.Base(w)))
		}
	}
	return append(accepted,
		wasmOf(sec(secMemory, 0x01, 0x00, 0x01)),
		funcModule([]byte{0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b}),
		funcModule([]byte{0x01, 0x01, valI32, 0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 10, 0, 0, 0x0b}),
	), refused
}

// The accepted seeds are valid modules that all rewrite, and wazero
// compiles the output.
func TestSeedsRewrite(t *testing.T) {
	accepted, _ := seeds(t)
	for i, s := range accepted {
		require.True(t, compiles(s), "seed %d is a valid module", i)
		_, err := Module(s, Options{})
		require.NoError(t, err, "seed %d", i)
		checkRewrite(t, s)
	}
}

func FuzzModule(f *testing.F) {
	accepted, refused := seeds(f)
	for _, s := range append(accepted, refused...) {
		f.Add(s)
	}
	f.Fuzz(checkRewrite)
}
