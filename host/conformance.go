package host

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/engine"
)

// This file is the host's side of the conformance kit (sdk/gatetest): what a
// kit needs to drive a module through the real host beyond Check.

// ModuleInfo is what a module declares, read without running its code, plus
// its descriptor when it loads.
type ModuleInfo = engine.Info

// Inspect reports a module's imports, exports, declared memory and every way
// its shape breaks the ABI (all of them; loading stops at the first). The
// error is non-nil only when wasm is not a WebAssembly module.
func Inspect(ctx context.Context, wasm []byte) (*ModuleInfo, error) {
	return engine.Inspect(ctx, wasm)
}

// Describe loads wasm as the host does at start (abi/SPEC.md §3.1 steps 2–9,
// with the default memory limit and load deadline) and returns its
// descriptor: parsed, and as the module served it. cacheDir is as
// Config.CacheDir. The error is a *LoadError.
func Describe(ctx context.Context, wasm []byte, cacheDir string) (abi.Descriptor, json.RawMessage, error) {
	h := &Host{cfg: Config{CacheDir: cacheDir, CompileTimeout: DefaultCompileTimeout}, engines: map[uint32]*engine.Engine{}, logger: slog.New(slog.DiscardHandler)}
	if cacheDir == "" {
		h.cfg.CacheDir = CacheOff
	}
	e, err := h.engine(ctx, DefaultMemoryLimit/engine.PageSize)
	if err != nil {
		return abi.Descriptor{}, nil, err
	}
	defer e.Close(ctx)
	mod, err := h.compile(ctx, e, wasm)
	p, err := load(ctx, e, "module", precompiled{mod, err}, "", 1, DefaultLoadTimeout)
	if err != nil {
		return abi.Descriptor{}, nil, err
	}
	defer p.pool.close(ctx)
	raw, err := json.Marshal(p.descriptor)
	return p.descriptor, raw, err
}

// KnownCapabilities lists the capabilities this host can grant, sorted.
func KnownCapabilities() []string { return knownCapabilities() }

// Descriptor returns the descriptor of a loaded plugin.
func (h *Host) Descriptor(plugin string) (abi.Descriptor, bool) {
	for v, p := range h.plugins {
		if v.plugin == plugin {
			return p.descriptor, true
		}
	}
	return abi.Descriptor{}, false
}

// EvaluateRequest hands request, byte for byte, to the plugin of the named
// pipeline's first stage, with that stage's grants, limits and the current
// catalog snapshot, and returns the stage's result, decided fail-closed as in
// Check. The host neither builds nor validates the request and records
// nothing in the event log: this is for conformance tests that must see how
// a gate answers requests the host itself would never send (malformed,
// empty, oversized). Errors: ErrClosed, ErrUnknownPipeline.
func (h *Host) EvaluateRequest(ctx context.Context, pipeline string, request []byte) (StageResult, error) {
	if h.closed.Load() {
		return StageResult{}, ErrClosed
	}
	p, ok := h.pipelines[pipeline]
	if !ok {
		return StageResult{}, fmt.Errorf("%w %q", ErrUnknownPipeline, pipeline)
	}
	s := p.stages[0]
	start := time.Now()
	r := StageResult{Name: s.cfg.Name, Plugin: s.cfg.Plugin, Mode: s.cfg.Mode, Findings: []abi.Finding{}}
	state := &runContext{host: h, snap: h.catalog.Snapshot(), granted: s.cfg.Capabilities, pipeline: p.name,
		stage: s.cfg.Name, runID: "request", subject: p.cfg.Subject}
	r = h.callStage(ctx, s, r, request, state)
	r.DurationMicros = time.Since(start).Microseconds()
	return r, nil
}
