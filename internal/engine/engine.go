// Package engine is gatehost's single seam onto the WebAssembly runtime
// (wazero). Everything that knows wazero lives here, so the engine can be
// replaced, or upgraded, without touching the host's logic.
//
// An Engine compiles modules and checks them against the ABI; a Module makes
// Instances; an Instance serves calls from one goroutine at a time.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"

	"github.com/gatehost/gatehost/abi"
	rt "github.com/gatehost/gatehost/internal/engine/wasmrt"
)

// PageSize is the WebAssembly page size in bytes.
const PageSize = 65536

// Options configures an Engine.
type Options struct {
	// CacheDir is the on-disk compilation cache; "" disables it. Its
	// entries are authenticated (see cache.go): New fails with a
	// *CacheError when the directory or its key is not private to the
	// user running the host.
	CacheDir string
	// Limits bounds the shape of the modules Compile accepts; zero fields
	// take DefaultLimits.
	Limits Limits
	// MemoryLimitPages caps every memory of every instance, in 64 KiB pages.
	MemoryLimitPages uint32
	// Calls serves the gatehost_v1 host functions.
	Calls CallHandler
	// Logger receives guest log messages and engine diagnostics.
	Logger *slog.Logger
	// Interrupt selects how a guest whose context is done is stopped;
	// the zero value is InterruptRewrite, what the host always runs.
	Interrupt Interrupt
}

// Interrupt is how an Engine stops a guest whose context is done.
type Interrupt int

const (
	// InterruptRewrite rewrites each module once at compile (package
	// rewrite): every function entry and loop header tests an exported
	// global that the instance sets when the call's context is done, and
	// bulk memory instructions run in chunks with the same test between
	// them. No call into Go on the guest's hot path.
	InterruptRewrite Interrupt = iota
	// InterruptRuntime uses the runtime's own check instead (stock
	// wazero's WithCloseOnContextDone: a call into Go at every loop
	// header). Benchmarks compare it with InterruptRewrite.
	InterruptRuntime
	// InterruptNone stops nothing where the runtime allows it
	// (wasmrt.InterruptOptional): a looping guest runs forever. Only
	// benchmarks measuring the cost of stopping set it; the host never
	// does.
	InterruptNone
)

// String names the mechanism: rewrite, runtime or none.
func (m Interrupt) String() string {
	switch m {
	case InterruptRewrite:
		return "rewrite"
	case InterruptRuntime:
		return "runtime"
	case InterruptNone:
		return "none"
	}
	return "unknown"
}

// CallHandler answers capability calls from guests. The state argument is
// the value passed to Instance.Evaluate for the call in progress, or nil
// during initialization and describe, when every capability is denied.
type CallHandler interface {
	Call(ctx context.Context, state any, op string, request []byte) []byte
	Log(ctx context.Context, state any, level int32, msg string)
}

// Engine owns one wazero runtime. It is safe for concurrent use.
type Engine struct {
	rt    rt.Runtime
	cache *authCache
	opts  Options

	// Compiles abandoned at their deadline keep running (the runtime
	// cannot stop one); the runtime is closed when the last one ends.
	mu        sync.Mutex
	compiling int
	closing   bool
	closeOnce sync.Once
	closeErr  error
	released  chan struct{} // closed when the runtime is released
}

// TestHookCompile, when set (by tests only), runs on the goroutine of each
// compile just before the runtime compiles, so a test can hold a compile
// "in progress" without depending on how long compiling takes.
var TestHookCompile func()

// New creates an Engine: a runtime whose calls stop when their context is
// done, with the WASI subset and the gatehost_v1 host functions installed.
func New(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MemoryLimitPages == 0 || opts.MemoryLimitPages > 65536 {
		return nil, fmt.Errorf("engine: memory limit %d pages out of range 1..65536", opts.MemoryLimitPages)
	}
	cfg := rt.NewRuntimeConfig().WithMemoryLimitPages(opts.MemoryLimitPages)
	// The runtime's own check calls into Go at every loop header; the
	// rewrite (InterruptRewrite) replaces it. docs/PERFORMANCE.md has
	// the cost of each.
	cfg = rt.WithInterrupt(cfg, opts.Interrupt == InterruptRuntime)
	opts.Limits = opts.Limits.withDefaults()
	e := &Engine{opts: opts, released: make(chan struct{})}
	if opts.CacheDir != "" {
		c, err := openCache(opts.CacheDir, opts.Logger)
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		e.cache = c
		cfg = cfg.WithCompilationCache(c.rc)
	}
	e.rt = rt.NewRuntimeWithConfig(ctx, cfg)
	if err := rt.InstantiateWASI(ctx, e.rt); err != nil {
		_ = e.Close(ctx)
		return nil, fmt.Errorf("engine: instantiate WASI: %w", err)
	}
	if err := e.instantiateHostModule(ctx); err != nil {
		_ = e.Close(ctx)
		return nil, fmt.Errorf("engine: instantiate %s: %w", abi.ImportModule, err)
	}
	return e, nil
}

// Close releases the runtime and every module and instance it made. When a
// compile abandoned at its deadline is still running, Close returns at once
// and the runtime is released when that compile ends.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closing = true
	busy := e.compiling > 0
	e.mu.Unlock()
	if busy {
		return nil
	}
	return e.release(ctx)
}

func (e *Engine) release(ctx context.Context) error {
	e.closeOnce.Do(func() {
		e.closeErr = e.rt.Close(ctx)
		if e.cache != nil {
			e.closeErr = errors.Join(e.closeErr, e.cache.Close(ctx))
		}
		close(e.released)
	})
	return e.closeErr
}

// LoadError is a module the engine refuses, with the reason.
type LoadError struct {
	// Kind is one of the Err* sentinels, for errors.Is.
	Kind error
	// Detail says what exactly was wrong.
	Detail string
	// Err is the underlying error, if any.
	Err error
}

func (e *LoadError) Error() string {
	s := e.Kind.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *LoadError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Kinds of LoadError.
var (
	ErrCompile         = errors.New("module does not compile")
	ErrMissingExport   = errors.New("module lacks a required export")
	ErrExportType      = errors.New("module export has the wrong signature")
	ErrForbiddenImport = errors.New("module imports outside the allowed set")
	ErrABIVersion      = errors.New("module ABI major not supported")
	ErrInstantiate     = errors.New("module does not instantiate")
	ErrDescriptor      = errors.New("module descriptor invalid")
	// ErrCompileTimeout: compiling did not finish by the context's
	// deadline (Config.CompileTimeout in package host).
	ErrCompileTimeout = errors.New("module did not compile within its deadline")
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("engine closed")
)

var allowedWASI = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range abi.WASIFunctions {
		m[f] = true
	}
	return m
}()

var allowedHost = map[string]bool{abi.ImportLog: true, abi.ImportCall: true, abi.ImportResult: true}

type signature struct{ params, results []rt.ValueType }

var requiredExports = map[string]signature{
	abi.ExportABIVersion: {nil, []rt.ValueType{rt.ValueTypeI32}},
	abi.ExportAlloc:      {[]rt.ValueType{rt.ValueTypeI32}, []rt.ValueType{rt.ValueTypeI32}},
	abi.ExportDescribe:   {nil, []rt.ValueType{rt.ValueTypeI64}},
	abi.ExportEvaluate:   {[]rt.ValueType{rt.ValueTypeI32, rt.ValueTypeI32}, []rt.ValueType{rt.ValueTypeI64}},
}

// Module is a compiled, checked gate module.
type Module struct {
	e          *Engine
	cm         rt.CompiledModule
	initialize bool
	// interrupt: the module was rewritten and exports the interrupt
	// globals (rewrite.InterruptExport, rewrite.CountdownExport).
	interrupt bool
	MinPages  uint32
}

// Compile checks wasm's shape against the engine's Limits (CheckShape),
// compiles it, and checks its imports and exports against the ABI. It runs
// no guest code. It returns when ctx is done even though the runtime's
// compile cannot be interrupted: the error is then a *LoadError of kind
// ErrCompileTimeout (deadline) or ErrCompile wrapping ctx.Err(), and the
// abandoned compile finishes in the background, its result discarded. The
// shape limits bound how long that can take.
func (e *Engine) Compile(ctx context.Context, wasm []byte) (*Module, error) {
	cm, err := e.compile(ctx, wasm, e.opts.Interrupt == InterruptRewrite)
	if errors.Is(err, errRewrite) {
		// Say first what is wrong with the module itself, if anything:
		// the runtime's refusal or the ABI's is the more precise error.
		orig, oerr := e.compile(ctx, wasm, false)
		if oerr != nil {
			return nil, oerr
		}
		p := shapeProblems(orig)
		_ = orig.Close(ctx)
		if len(p) > 0 {
			return nil, p[0]
		}
	}
	if err != nil {
		return nil, err
	}
	m := &Module{e: e, cm: cm, interrupt: e.opts.Interrupt == InterruptRewrite}
	if err := m.check(); err != nil {
		_ = cm.Close(ctx)
		return nil, err
	}
	return m, nil
}

// compile is Compile without the ABI check: the compiled module, or a
// *LoadError. With rewrite it compiles the module rewritten for
// interruption (a refusal of the rewrite wraps errRewrite). Inspect uses
// it too, so what it reports is what the engine would run.
func (e *Engine) compile(ctx context.Context, wasm []byte, rewrite bool) (rt.CompiledModule, error) {
	if _, err := CheckShape(wasm, e.opts.Limits); err != nil {
		return nil, err
	}
	if rewrite {
		w, err := e.rewritten(wasm)
		if err != nil {
			return nil, rewriteRefused(err)
		}
		wasm = w
	}
	if err := ctx.Err(); err != nil {
		return nil, compileAbandoned(err)
	}
	e.mu.Lock()
	closing := e.closing
	e.mu.Unlock()
	if closing {
		return nil, &LoadError{Kind: ErrCompile, Err: ErrClosed}
	}
	finish := func() {}
	var sum string
	if e.cache != nil {
		sum = moduleSum(wasm)
		f, err := e.cache.await(ctx, sum)
		if err != nil {
			return nil, compileAbandoned(err)
		}
		finish = f
	}
	e.mu.Lock()
	if e.closing {
		e.mu.Unlock()
		finish()
		return nil, &LoadError{Kind: ErrCompile, Err: ErrClosed}
	}
	e.compiling++
	e.mu.Unlock()
	type result struct {
		cm  rt.CompiledModule
		err error
	}
	done := make(chan result, 1)
	// claim decides, once, who owns the result: the compile, which hands
	// it over, or the caller, who abandons it at ctx's end.
	var once sync.Once
	claim := func() (first bool) {
		once.Do(func() { first = true })
		return first
	}
	hook := TestHookCompile
	var seen before
	if e.cache != nil {
		seen = e.cache.prepare(sum)
	}
	go func() {
		if hook != nil {
			hook()
		}
		// The compile gets a context that is never done, so that it
		// cannot half-fail on the caller's deadline: the caller abandons
		// it at its end (below). Its functions are compiled on every CPU
		// the process may use: the same machine code, sooner.
		cctx := rt.WithCompilationWorkers(context.WithoutCancel(ctx), runtime.GOMAXPROCS(0))
		cm, err := e.rt.CompileModule(cctx, wasm)
		if err == nil && e.cache != nil {
			e.cache.record(seen)
		}
		finish()
		won := claim()
		if !won && err == nil { // abandoned: discard
			_ = cm.Close(context.Background())
		}
		// Counted out before the caller has the module, so a Close right
		// after Compile releases the runtime itself.
		e.mu.Lock()
		e.compiling--
		last := e.closing && e.compiling == 0
		e.mu.Unlock()
		if last {
			_ = e.release(context.Background())
		}
		if won {
			done <- result{cm, err}
		}
	}()
	var cm rt.CompiledModule
	select {
	case r := <-done:
		if r.err != nil {
			return nil, &LoadError{Kind: ErrCompile, Err: r.err}
		}
		cm = r.cm
	case <-ctx.Done():
		if claim() {
			e.opts.Logger.Warn("engine: compile abandoned; it finishes in the background", "err", ctx.Err())
			return nil, compileAbandoned(ctx.Err())
		}
		r := <-done // finished meanwhile
		if r.err != nil {
			return nil, &LoadError{Kind: ErrCompile, Err: r.err}
		}
		cm = r.cm
	}
	return cm, nil
}

func compileAbandoned(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &LoadError{Kind: ErrCompileTimeout, Err: err}
	}
	return &LoadError{Kind: ErrCompile, Detail: "abandoned", Err: err}
}

// check refuses a module whose imports or exports break the ABI, with the
// first of shapeProblems, and one whose initial memory exceeds the
// engine's limit.
func (m *Module) check() error {
	if p := shapeProblems(m.cm); len(p) > 0 {
		return p[0]
	}
	_, m.initialize = m.cm.ExportedFunctions()[abi.ExportInitialize]
	m.MinPages = m.cm.ExportedMemories()[abi.ExportMemory].Min()
	if m.MinPages > m.e.opts.MemoryLimitPages {
		return &LoadError{Kind: ErrInstantiate, Detail: fmt.Sprintf("module needs %d pages of memory, limit is %d", m.MinPages, m.e.opts.MemoryLimitPages)}
	}
	return nil
}

// shapeProblems lists every way cm's imports and exports break abi/SPEC.md
// §2, in a fixed order: forbidden function imports, imported memories, the
// required exports by name, gate_initialize's signature, the exported
// memory. It is the one statement of that rule: Compile refuses with the
// first, Inspect reports them all.
func shapeProblems(cm rt.CompiledModule) []*LoadError {
	var ps []*LoadError
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch {
		case mod == abi.ImportModule && allowedHost[name]:
		case mod == abi.WASIModule && allowedWASI[name]:
		default:
			ps = append(ps, &LoadError{Kind: ErrForbiddenImport, Detail: fmt.Sprintf("function %s.%s", mod, name)})
		}
	}
	for _, mem := range cm.ImportedMemories() {
		mod, name, _ := mem.Import()
		ps = append(ps, &LoadError{Kind: ErrForbiddenImport, Detail: fmt.Sprintf("memory %s.%s", mod, name)})
	}
	exports := cm.ExportedFunctions()
	names := make([]string, 0, len(requiredExports))
	for n := range requiredExports {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		want := requiredExports[n]
		f, ok := exports[n]
		if !ok {
			ps = append(ps, &LoadError{Kind: ErrMissingExport, Detail: n})
			continue
		}
		if !slices.Equal(f.ParamTypes(), want.params) || !slices.Equal(f.ResultTypes(), want.results) {
			ps = append(ps, &LoadError{Kind: ErrExportType, Detail: fmt.Sprintf("%s has %s, want %s", n,
				sigString(f.ParamTypes(), f.ResultTypes()), sigString(want.params, want.results))})
		}
	}
	if init, ok := exports[abi.ExportInitialize]; ok && (len(init.ParamTypes()) != 0 || len(init.ResultTypes()) != 0) {
		ps = append(ps, &LoadError{Kind: ErrExportType, Detail: abi.ExportInitialize + " must take and return nothing"})
	}
	if _, ok := cm.ExportedMemories()[abi.ExportMemory]; !ok {
		ps = append(ps, &LoadError{Kind: ErrMissingExport, Detail: "memory " + abi.ExportMemory})
	}
	return ps
}

func sigString(params, results []rt.ValueType) string {
	s := "("
	for i, p := range params {
		if i > 0 {
			s += ","
		}
		s += rt.ValueTypeName(p)
	}
	s += ")->("
	for i, r := range results {
		if i > 0 {
			s += ","
		}
		s += rt.ValueTypeName(r)
	}
	return s + ")"
}

// Close releases the compiled module.
func (m *Module) Close(ctx context.Context) error { return m.cm.Close(ctx) }
