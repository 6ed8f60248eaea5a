package engine

import (
	"context"
	"log/slog"
	"slices"
	"strings"

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
// cache, no memory limit beyond the spec's 4 GiB) on the runtime the engine
// runs (package wasmrt), and reports its imports, exports, memory and every
// ABI shape problem: the same rule, in the same order, as Compile, which
// stops at the first; for a module with none of them, a refusal of the
// interrupt rewrite, if any.
// The error, a *LoadError, is non-nil only when the bytes are not a
// WebAssembly module, exceed a shape limit, or did not compile before ctx
// was done (see Engine.Compile).
func Inspect(ctx context.Context, wasm []byte) (*Info, error) {
	e, err := New(ctx, Options{MemoryLimitPages: 65536, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	defer e.Close(context.WithoutCancel(ctx))
	cm, err := e.compile(ctx, wasm, false)
	if err != nil {
		return nil, err
	}
	defer cm.Close(context.WithoutCancel(ctx))
	info := &Info{Imports: []Func{}, Exports: []Func{}, Problems: []string{}}
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		info.Imports = append(info.Imports, Func{Module: mod, Name: name, Kind: "func", Signature: sigString(f.ParamTypes(), f.ResultTypes())})
	}
	for _, m := range cm.ImportedMemories() {
		mod, name, _ := m.Import()
		info.Imports = append(info.Imports, Func{Module: mod, Name: name, Kind: "memory"})
	}
	for name, f := range cm.ExportedFunctions() {
		info.Exports = append(info.Exports, Func{Name: name, Kind: "func", Signature: sigString(f.ParamTypes(), f.ResultTypes())})
	}
	for name := range cm.ExportedMemories() {
		info.Exports = append(info.Exports, Func{Name: name, Kind: "memory"})
	}
	slices.SortFunc(info.Imports, func(a, b Func) int { return strings.Compare(a.Module+"."+a.Name, b.Module+"."+b.Name) })
	slices.SortFunc(info.Exports, func(a, b Func) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range shapeProblems(cm) {
		info.Problems = append(info.Problems, p.Error())
	}
	// The module as declared compiles and has the ABI's shape; the engine
	// runs it rewritten for interruption, which can still refuse it.
	if len(info.Problems) == 0 {
		if _, err := e.rewritten(wasm); err != nil {
			info.Problems = append(info.Problems, rewriteRefused(err).Error())
		}
	}
	if mem, ok := cm.ExportedMemories()[abi.ExportMemory]; ok {
		info.Memory = &Memory{MinPages: mem.Min()}
		if max, ok := mem.Max(); ok {
			info.Memory.MaxPages = &max
		}
	}
	return info, nil
}
