package rewrite

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// checkVariants are the three ways to run a guest compared by
// BenchmarkCheckCost: the rewrite with wazero's own check off, wazero's
// check (an exit to Go at every loop header) on the original, and the
// original unchecked (the floor: a runaway guest never stops).
var checkVariants = []struct {
	name      string
	rewritten bool
	closeOn   bool
}{
	{"rewritten", true, false},
	{"closeOnContextDone", false, true},
	{"unchecked", false, false},
}

func instantiate(b *testing.B, wasm []byte, rewritten, closeOn bool) (api.Module, func()) {
	b.Helper()
	ctx := context.Background()
	if rewritten {
		wasm = mustRewrite(b, wasm, Options{})
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(closeOn))
	cm, err := rt.CompileModule(ctx, wasm)
	require.NoError(b, err)
	// Gates import WASI and gatehost_v1: stub the latter with zero results.
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	host := rt.NewHostModuleBuilder("gatehost_v1")
	have := false
	for _, f := range cm.ImportedFunctions() {
		if mod, name, _ := f.Import(); mod == "gatehost_v1" {
			results := len(f.ResultTypes())
			host.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
				clear(stack[:results])
			}), f.ParamTypes(), f.ResultTypes()).Export(name)
			have = true
		}
	}
	if have {
		_, err = host.Instantiate(ctx)
		require.NoError(b, err)
	}
	mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	require.NoError(b, err)
	return mod, func() { _ = rt.Close(ctx) }
}

// BenchmarkCheckCost measures what stopping a runaway guest costs on the
// guest's own work; compare the variants side by side in one run.
func BenchmarkCheckCost(b *testing.B) {
	ctx := context.Background()
	compute := assemble(b, "compute.wat")
	shapes := []struct {
		name string
		wasm []byte
		fn   string
		args []uint64
	}{
		{"loop-1e6", compute, "sum", []uint64{1_000_000}},
		{"calls-fib25", compute, "fib", []uint64{25}},
		{"small-copies-1e5", compute, "small_copies", []uint64{100_000}},
	}
	if gate, ok := pluginModules(b)["static-verify.wasm"]; ok {
		shapes = append(shapes, struct {
			name string
			wasm []byte
			fn   string
			args []uint64
		}{"static-verify-describe", gate, "gate_describe", nil})
	}
	for _, s := range shapes {
		for _, v := range checkVariants {
			b.Run(s.name+"/"+v.name, func(b *testing.B) {
				mod, done := instantiate(b, s.wasm, v.rewritten, v.closeOn)
				defer done()
				f := mod.ExportedFunction(s.fn)
				for b.Loop() {
					if _, err := f.Call(ctx, s.args...); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
