//go:build gatehost_wazy

package wasmrt

import (
	"context"

	wazero "github.com/samyfodil/wazy"
	"github.com/samyfodil/wazy/api"
	"github.com/samyfodil/wazy/imports/wasi_snapshot_preview1"
	"github.com/samyfodil/wazy/sys"
)

// Name identifies the runtime in benchmarks and logs.
const Name = "wazy v0.8.0"

// InterruptOptional is false: wazy's compiled code always checks Go's
// preemption word, so a done context stops a guest with no option to set.
const InterruptOptional = false

// WithInterrupt returns cfg; see InterruptOptional.
func WithInterrupt(cfg RuntimeConfig, _ bool) RuntimeConfig { return cfg }

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
)

// LinearMemory is wazero's experimental.LinearMemory, which wazy lacks.
type LinearMemory interface {
	Reallocate(size uint64) []byte
	Free()
}

// MemoryAllocatorSupported is false: wazy has no allocator hook, so a growing
// memory is reallocated and copied by the runtime (docs/CONFIGURATION.md
// "Host memory per instance").
const MemoryAllocatorSupported = false

// WithMemoryAllocator returns ctx; see MemoryAllocatorSupported.
func WithMemoryAllocator(ctx context.Context, _ func(capBytes, maxBytes uint64) LinearMemory) context.Context {
	return ctx
}

const (
	ValueTypeI32             = api.ValueTypeI32
	ValueTypeI64             = api.ValueTypeI64
	ExitCodeContextCanceled  = sys.ExitCodeContextCanceled
	ExitCodeDeadlineExceeded = sys.ExitCodeDeadlineExceeded
)

// WithCompilationWorkers returns ctx: wazy compiles a module's functions
// on one goroutine.
func WithCompilationWorkers(ctx context.Context, _ int) context.Context { return ctx }

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
