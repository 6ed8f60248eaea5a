//go:build !gatehost_wazy

package wasmrt

import (
	"context"

	wazero "github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// Name identifies the runtime in benchmarks and logs.
const Name = "wazero v1.12.0"

// InterruptOptional is true: stock wazero's own stop, WithCloseOnContextDone,
// is an option (a call into Go at every loop header; none at function
// entry). The engine leaves it off and rewrites modules instead.
const InterruptOptional = true

// WithInterrupt turns the deadline check on or off.
func WithInterrupt(cfg RuntimeConfig, on bool) RuntimeConfig { return cfg.WithCloseOnContextDone(on) }

type (
	Runtime          = wazero.Runtime
	RuntimeConfig    = wazero.RuntimeConfig
	CompilationCache = wazero.CompilationCache
	CompiledModule   = wazero.CompiledModule
	ModuleConfig     = wazero.ModuleConfig
	Module           = api.Module
	Function         = api.Function
	MutableGlobal    = api.MutableGlobal
	GoModuleFunc     = api.GoModuleFunc
	ValueType        = api.ValueType
	ExitError        = sys.ExitError
	LinearMemory     = experimental.LinearMemory
)

// MemoryAllocatorSupported is true: wazero takes a linear-memory allocator
// from the instantiation context (experimental.WithMemoryAllocator).
const MemoryAllocatorSupported = true

// WithMemoryAllocator returns ctx carrying alloc, used for the memories of
// modules instantiated under it. alloc(capBytes, maxBytes) must not return
// nil.
func WithMemoryAllocator(ctx context.Context, alloc func(capBytes, maxBytes uint64) LinearMemory) context.Context {
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(alloc))
}

const (
	ValueTypeI32             = api.ValueTypeI32
	ValueTypeI64             = api.ValueTypeI64
	ExitCodeContextCanceled  = sys.ExitCodeContextCanceled
	ExitCodeDeadlineExceeded = sys.ExitCodeDeadlineExceeded
)

// WithCompilationWorkers returns ctx asking a compile under it to spread
// the module's functions over n goroutines (experimental.
// WithCompilationWorkers); the machine code is the same, only sooner.
func WithCompilationWorkers(ctx context.Context, n int) context.Context {
	return experimental.WithCompilationWorkers(ctx, n)
}

func NewRuntimeConfig() RuntimeConfig { return wazero.NewRuntimeConfig() }
func NewModuleConfig() ModuleConfig   { return wazero.NewModuleConfig() }
func NewRuntimeWithConfig(ctx context.Context, cfg RuntimeConfig) Runtime {
	return wazero.NewRuntimeWithConfig(ctx, cfg)
}
func NewCompilationCacheWithDir(dir string) (CompilationCache, error) {
	return wazero.NewCompilationCacheWithDir(dir)
}

// InstantiateWASI installs wasi_snapshot_preview1 in r.
func InstantiateWASI(ctx context.Context, r Runtime) error {
	_, err := wasi_snapshot_preview1.Instantiate(ctx, r)
	return err
}

func ValueTypeName(t ValueType) string { return api.ValueTypeName(t) }
func DecodeI32(v uint64) int32         { return api.DecodeI32(v) }
func DecodeU32(v uint64) uint32        { return api.DecodeU32(v) }
func EncodeI32(v int32) uint64         { return api.EncodeI32(v) }
