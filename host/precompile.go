package host

import (
	"context"
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/gatehost/gatehost/internal/engine"
)

// precompiled is a module compiled ahead of load, or why it did not compile.
type precompiled struct {
	mod *engine.Module
	err error
}

// compiledModule is a plugin variant's compiled module and the SHA-256 of
// the module's bytes.
type compiledModule struct {
	precompiled
	sum string
}

// loadPlan is what New loads: the pipelines (sorted by name, OnlyPipeline
// applied) and every plugin variant their stages use, in first-use order.
type loadPlan struct {
	pipelines []string
	variants  []variant
}

// variantOf is the plugin variant a stage of the normalized config runs: its
// plugin compiled for its memory limit, rounded up to whole pages.
func variantOf(sc StageConfig) variant {
	return variant{sc.Plugin, uint32((sc.MemoryLimit + engine.PageSize - 1) / engine.PageSize)}
}

// plan lists what to load from the normalized config.
func (h *Host) plan() loadPlan {
	var pl loadPlan
	for _, pname := range slices.Sorted(maps.Keys(h.cfg.Pipelines)) {
		if h.cfg.OnlyPipeline != "" && pname != h.cfg.OnlyPipeline {
			continue // checked by normalize, not loaded (Config.OnlyPipeline)
		}
		pl.pipelines = append(pl.pipelines, pname)
		for _, sc := range h.cfg.Pipelines[pname].Stages {
			if v := variantOf(sc); !slices.Contains(pl.variants, v) {
				pl.variants = append(pl.variants, v)
			}
		}
	}
	return pl
}

// compileAll reads the module of every planned variant and compiles them, up
// to GOMAXPROCS at once. Compiling is most of a cold start (seconds per
// module without a warm cache) and runs no guest code, so it parallelizes
// safely. A module that cannot be read, or an engine that cannot be made, is
// returned at once, in plan order; a compile failure is kept with its
// variant for load to report in stage order.
func (h *Host) compileAll(ctx context.Context, pl loadPlan) (map[variant]compiledModule, error) {
	type job struct {
		key  variant
		e    *engine.Engine
		wasm []byte
	}
	wasms, sums := map[string][]byte{}, map[string]string{}
	jobs := make([]job, 0, len(pl.variants))
	for _, v := range pl.variants {
		if _, ok := wasms[v.plugin]; !ok {
			wasm, sum, err := readModule(v.plugin, h.cfg.Plugins[v.plugin])
			if err != nil {
				return nil, err
			}
			wasms[v.plugin], sums[v.plugin] = wasm, sum
		}
		e, err := h.engine(ctx, v.pages)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, job{v, e, wasms[v.plugin]})
	}
	out := make(map[variant]compiledModule, len(jobs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, j := range jobs {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done(): // a canceled load returns at once
			}
			mod, err := h.compile(ctx, j.e, j.wasm)
			mu.Lock()
			out[j.key] = compiledModule{precompiled{mod, err}, sums[j.key.plugin]}
			mu.Unlock()
		})
	}
	wg.Wait()
	return out, nil
}
