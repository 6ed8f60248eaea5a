package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero"

	"github.com/gatehost/gatehost/abi"
)

// Info is what a module declares, read without running any of its code.
type Info struct {
	Imports []Func `json:"imports"`
	Exports []Func `json:"exports"`
	// Memory is the exported memory "memory"; nil when there is none.
	Memory *Memory `json:"memory,omitempty"`
	// Problems lists every way the module's shape breaks abi/SPEC.md §2
	// (forbidden imports, missing or mistyped exports, an imported
	// memory), all of them, where Compile stops at the first.
	Problems []string `json:"problems"`
}

// Func is an imported or exported function, or another exported item.
type Func struct {
	Module    string `json:"module,omitempty"` // imports only
	Name      string `json:"name"`
	Kind      string `json:"kind"` // func, memory, table or global
	Signature string `json:"signature,omitempty"`
}

// Memory is a module's declared linear memory, in 64 KiB pages.
type Memory struct {
	MinPages uint32 `json:"min_pages"`
	// MaxPages is nil when the module declares no maximum.
	MaxPages *uint32 `json:"max_pages,omitempty"`
}

// Inspect checks wasm's shape against DefaultLimits, compiles it (with no
// cache, no memory limit beyond the spec's 4 GiB) and reports its imports,
// exports, memory and every ABI shape problem. The error, a *LoadError, is
// non-nil only when the bytes are not a WebAssembly module, exceed a shape
// limit, or did not compile before ctx was done (see Engine.Compile).
func Inspect(ctx context.Context, wasm []byte) (*Info, error) {
	if _, err := CheckShape(wasm, Limits{}); err != nil {
		return nil, err
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithMemoryLimitPages(65536))
	type result struct {
		cm  wazero.CompiledModule
		err error
	}
	done := make(chan result, 1)
	go func() {
		cm, err := rt.CompileModule(context.WithoutCancel(ctx), wasm)
		done <- result{cm, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		go func() { <-done; _ = rt.Close(context.Background()) }() // once the abandoned compile ends
		return nil, compileAbandoned(ctx.Err())
	}
	defer rt.Close(ctx)
	if r.err != nil {
		return nil, &LoadError{Kind: ErrCompile, Err: r.err}
	}
	cm := r.cm
	defer cm.Close(ctx)
	info := &Info{Imports: []Func{}, Exports: []Func{}, Problems: []string{}}
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		info.Imports = append(info.Imports, Func{Module: mod, Name: name, Kind: "func", Signature: sigString(f.ParamTypes(), f.ResultTypes())})
		switch {
		case mod == abi.ImportModule && allowedHost[name]:
		case mod == abi.WASIModule && allowedWASI[name]:
		default:
			info.Problems = append(info.Problems, fmt.Sprintf("%s: function %s.%s", ErrForbiddenImport, mod, name))
		}
	}
	for _, m := range cm.ImportedMemories() {
		mod, name, _ := m.Import()
		info.Imports = append(info.Imports, Func{Module: mod, Name: name, Kind: "memory"})
		info.Problems = append(info.Problems, fmt.Sprintf("%s: memory %s.%s", ErrForbiddenImport, mod, name))
	}
	exports := cm.ExportedFunctions()
	for name, f := range exports {
		info.Exports = append(info.Exports, Func{Name: name, Kind: "func", Signature: sigString(f.ParamTypes(), f.ResultTypes())})
	}
	for name := range cm.ExportedMemories() {
		info.Exports = append(info.Exports, Func{Name: name, Kind: "memory"})
	}
	slices.SortFunc(info.Imports, func(a, b Func) int { return strings.Compare(a.Module+"."+a.Name, b.Module+"."+b.Name) })
	slices.SortFunc(info.Exports, func(a, b Func) int { return strings.Compare(a.Name, b.Name) })
	names := make([]string, 0, len(requiredExports))
	for n := range requiredExports {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		want := requiredExports[n]
		f, ok := exports[n]
		if !ok {
			info.Problems = append(info.Problems, fmt.Sprintf("%s: %s", ErrMissingExport, n))
			continue
		}
		if !slices.Equal(f.ParamTypes(), want.params) || !slices.Equal(f.ResultTypes(), want.results) {
			info.Problems = append(info.Problems, fmt.Sprintf("%s: %s has %s, want %s", ErrExportType, n,
				sigString(f.ParamTypes(), f.ResultTypes()), sigString(want.params, want.results)))
		}
	}
	if init, ok := exports[abi.ExportInitialize]; ok && (len(init.ParamTypes()) != 0 || len(init.ResultTypes()) != 0) {
		info.Problems = append(info.Problems, fmt.Sprintf("%s: %s must take and return nothing", ErrExportType, abi.ExportInitialize))
	}
	if mem, ok := cm.ExportedMemories()[abi.ExportMemory]; ok {
		info.Memory = &Memory{MinPages: mem.Min()}
		if max, ok := mem.Max(); ok {
			info.Memory.MaxPages = &max
		}
	} else {
		info.Problems = append(info.Problems, fmt.Sprintf("%s: memory %s", ErrMissingExport, abi.ExportMemory))
	}
	return info, nil
}
