package host

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/engine"
)

// This file holds what the conformance kit (sdk/gatekit) needs from the host
// beyond Check: a module's descriptor, the capabilities the host knows, and a
// gate's answer to a request the host did not build.

// KnownCapabilities lists the capabilities the host can grant, sorted: the
// names a stage's capabilities may list.
func KnownCapabilities() []string { return knownCapabilities() }

// Describe loads wasm as the host does at start (abi/SPEC.md §3.1 steps 2–9,
// with the default memory limit and load deadline) and returns its
// descriptor: parsed, and as the module served it. cacheDir is as
// Config.CacheDir, "" meaning none. The error is a *LoadError.
func Describe(ctx context.Context, wasm []byte, cacheDir string) (abi.Descriptor, json.RawMessage, error) {
	h := &Host{cfg: Config{CacheDir: cmp.Or(cacheDir, CacheOff), CompileTimeout: DefaultCompileTimeout},
		engines: map[uint32]*engine.Engine{}, logger: slog.New(slog.DiscardHandler)}
	e, err := h.engine(ctx, DefaultMemoryLimit/engine.PageSize)
	if err != nil {
		return abi.Descriptor{}, nil, err
	}
	defer e.Close(ctx)
	mod, err := h.compile(ctx, e, wasm)
	p, err := load(ctx, "module", precompiled{mod, err}, "", 1, DefaultLoadTimeout)
	if err != nil {
		return abi.Descriptor{}, nil, err
	}
	defer p.pool.close(ctx)
	raw, err := json.Marshal(p.descriptor)
	return p.descriptor, raw, err
}

// EvaluateRequest is for the conformance kit: it hands request, byte for
// byte, to the plugin of the named pipeline's first stage, with that stage's
// grants, limits and the current catalog snapshot, and returns the stage's
// result, decided fail-closed as in Check. The host neither builds nor
// validates the request and records nothing in the event log: the kit must
// see how a gate answers requests the host itself never sends (malformed,
// empty, oversized). Errors: ErrClosed, ErrUnknownPipeline. To check a
// subject, call Check.
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
	r = h.callStage(ctx, s, r, stageRequest{fixed: true, raw: request}, state)
	r.DurationMicros = time.Since(start).Microseconds()
	return r, nil
}
