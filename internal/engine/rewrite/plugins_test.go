package rewrite

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pluginModules are the gates `make build` writes; none when it has not
// run (this package builds nothing itself).
func pluginModules(tb testing.TB) map[string][]byte {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "build", "plugins", "*.wasm"))
	require.NoError(tb, err)
	mods := map[string][]byte{}
	for _, p := range paths {
		mods[filepath.Base(p)] = readFile(tb, p)
	}
	return mods
}

// Every real gate rewrites, deterministically, and wazero compiles the
// result. Runs after `make build`.
func TestPluginModules(t *testing.T) {
	mods := pluginModules(t)
	if len(mods) == 0 {
		t.Skip("no build/plugins/*.wasm: run `make build` first")
	}
	ctx := context.Background()
	rt := newRuntime(t)
	for name, wasm := range mods {
		t.Run(name, func(t *testing.T) {
			out := mustRewrite(t, wasm, Options{})
			t.Logf("%d → %d bytes (+%.2f%%)", len(wasm), len(out), 100*float64(len(out)-len(wasm))/float64(len(wasm)))
			assert.True(t, bytes.Equal(out, mustRewrite(t, wasm, Options{})), "deterministic")
			cm, err := rt.CompileModule(ctx, out)
			require.NoError(t, err)
			defer cm.Close(ctx)
			for _, export := range []string{"gate_abi_version", "gate_describe", "gate_evaluate"} {
				assert.Contains(t, cm.ExportedFunctions(), export)
			}
			// A Go guest's runtime calls these three: each call goes through its guard.
			m := &module{in: wasm, bulkType: -1}
			require.NoError(t, m.parse())
			var used []string
			for _, g := range m.guards {
				if g.used {
					used = append(used, g.name)
				}
			}
			assert.Subset(t, used, []string{"random_get", "poll_oneoff", "fd_write"})
		})
	}
}

// BenchmarkModule rewrites each gate, the largest (static-verify) among
// them (MB/s of input).
func BenchmarkModule(b *testing.B) {
	mods := pluginModules(b)
	if len(mods) == 0 {
		b.Skip("no build/plugins/*.wasm: run `make build` first")
	}
	for name, wasm := range mods {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(wasm)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Module(wasm, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
