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
	"github.com/gatehost/gatehost/internal/hostkit"
)

// This file is the host's side of the conformance kit (sdk/gatekit), reached
// through internal/hostkit: what a kit needs to drive a module through the
// real host beyond Check.

func init() {
	hostkit.Describe = describe
	hostkit.KnownCapabilities = knownCapabilities
	hostkit.EvaluateRequest = func(ctx context.Context, h any, pipeline string, request []byte) (any, error) {
		return h.(*Host).evaluateRequest(ctx, pipeline, request)
	}
}

// describe: see hostkit.Describe.
func describe(ctx context.Context, wasm []byte, cacheDir string) (abi.Descriptor, json.RawMessage, error) {
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

// evaluateRequest: see hostkit.EvaluateRequest.
func (h *Host) evaluateRequest(ctx context.Context, pipeline string, request []byte) (StageResult, error) {
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
