package host

import (
	"cmp"
	"context"
	"runtime"
	"sync"

	"github.com/gatehost/gatehost/internal/engine"
)

// precompiled is a module compiled ahead of load, or why it did not compile.
type precompiled struct {
	mod *engine.Module
	err error
}

// precompile reads and compiles every plugin variant the pipelines use, up
// to GOMAXPROCS at once, before build loads them in order. Compiling is
// most of a cold start (seconds per module without a warm cache) and runs
// no guest code, so it parallelizes safely. Anything it cannot do here (a
// bad name, an unreadable module) is left for build to report, in order.
// It returns the modules it read, by plugin name, and their digests.
func (h *Host) precompile(ctx context.Context) (modules map[string][]byte, sums map[string]string) {
	modules, sums = map[string][]byte{}, map[string]string{}
	type job struct {
		key  variant
		e    *engine.Engine
		wasm []byte
	}
	var jobs []job
	seen := map[variant]bool{}
	for pname, pc := range h.cfg.Pipelines {
		if h.cfg.OnlyPipeline != "" && pname != h.cfg.OnlyPipeline {
			continue
		}
		for _, sc := range pc.Stages {
			pcfg, ok := h.cfg.Plugins[sc.Plugin]
			limit := cmp.Or(sc.MemoryLimit, DefaultMemoryLimit)
			if !ok || !nameRE.MatchString(sc.Plugin) || limit > 1<<32 {
				continue
			}
			key := variant{sc.Plugin, uint32((limit + engine.PageSize - 1) / engine.PageSize)}
			if seen[key] {
				continue
			}
			seen[key] = true
			if _, ok := modules[sc.Plugin]; !ok {
				wasm, sum, err := readModule(sc.Plugin, pcfg)
				if err != nil {
					continue
				}
				modules[sc.Plugin], sums[sc.Plugin] = wasm, sum
			}
			e, err := h.engine(ctx, key.pages)
			if err != nil {
				continue
			}
			jobs = append(jobs, job{key, e, modules[sc.Plugin]})
		}
	}
	h.compiled = map[variant]precompiled{}
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
			h.compiled[j.key] = precompiled{mod, err}
			mu.Unlock()
		})
	}
	wg.Wait()
	return modules, sums
}
