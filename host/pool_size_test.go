package host_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

const mib = 1 << 20

// acceptAllConfig is one pipeline, p, of one stage running accept-all (a
// module of 4 pages) with the given memory limit (0: the default).
func acceptAllConfig(t *testing.T, memory uint64) host.Config {
	t.Helper()
	wasm, err := testwasm.WAT("testdata/edge/accept-all.wat")
	require.NoError(t, err)
	return host.Config{
		Plugins: map[string]host.PluginConfig{"accept": {Module: wasm}},
		Pipelines: map[string]host.PipelineConfig{"p": {Subject: abi.SubjectProposal, Stages: []host.StageConfig{
			{Plugin: "accept", MemoryLimit: memory},
		}}},
	}
}

// TestPoolSizing: a pool's size is PoolSize (default GOMAXPROCS), lowered
// to what PoolMemoryBudget holds at the stage's memory limit; New leaves
// the probe instance alone in it, or fills it with WarmPools.
func TestPoolSizing(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	tests := []struct {
		name     string
		poolSize int
		budget   uint64
		memory   uint64
		warm     bool
		wantSize int
	}{
		{name: "CPU default", wantSize: procs},
		{name: "explicit size", poolSize: 5, wantSize: 5},
		{name: "budget caps the count", poolSize: 8, budget: 3*mib + mib/2, memory: mib, wantSize: 3},
		{name: "budget of exactly one instance", poolSize: 8, budget: mib, memory: mib, wantSize: 1},
		{name: "budget above the size keeps the size", poolSize: 2, budget: 1 << 30, memory: mib, wantSize: 2},
		{name: "budget caps the CPU default", budget: mib, memory: mib, wantSize: 1},
		{name: "memory limit counted in whole pages", poolSize: 8, budget: 10 * 64 << 10, memory: 5*64<<10 + 1, wantSize: 1},
		{name: "budget against the default memory limit", poolSize: 8, budget: 2*host.DefaultMemoryLimit + mib, wantSize: 2},
		{name: "warmed", poolSize: 3, warm: true, wantSize: 3},
		{name: "warmed under a budget", poolSize: 8, budget: 2 * mib, memory: mib, warm: true, wantSize: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := acceptAllConfig(t, tt.memory)
			cfg.PoolSize, cfg.PoolMemoryBudget, cfg.WarmPools = tt.poolSize, tt.budget, tt.warm
			h := hosttest.New(t, cfg)
			stats := h.PoolStats()
			require.Len(t, stats, 1)
			st := stats[0]
			assert.Equal(t, tt.wantSize, st.Size)
			ready := 1 // the load-time probe
			if tt.warm {
				ready = tt.wantSize
			}
			assert.Equal(t, ready, st.Live, "live instances after New")
			assert.Equal(t, ready, st.Idle, "ready instances after New")
			assert.EqualValues(t, ready, st.Created)
		})
	}
}

// TestPoolBudgetTooSmall: a budget that cannot hold one instance of some
// stage refuses the config, naming pool_memory_budget and the stage, even
// for a pipeline a one-shot host would not load.
func TestPoolBudgetTooSmall(t *testing.T) {
	tests := []struct {
		name   string
		budget uint64
		memory uint64
		only   bool
		want   string
	}{
		{name: "one byte, default memory limit", budget: 1,
			want: "1 bytes cannot hold one instance of plugin accept at pipelines.p.stages[0].memory_limit (67108864 bytes)"},
		{name: "one byte short of the limit", budget: mib - 1, memory: mib,
			want: "1048575 bytes cannot hold one instance of plugin accept at pipelines.p.stages[0].memory_limit (1048576 bytes)"},
		{name: "limit rounded up to a page", budget: mib, memory: mib + 1,
			want: "1048576 bytes cannot hold one instance of plugin accept at pipelines.p.stages[0].memory_limit (1114112 bytes)"},
		{name: "pipeline not loaded", budget: mib, memory: mib, only: true,
			want: "1048576 bytes cannot hold one instance of plugin accept at pipelines.q.stages[0].memory_limit (67108864 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := acceptAllConfig(t, tt.memory)
			cfg.PoolMemoryBudget = tt.budget
			if tt.only {
				cfg.Pipelines["q"] = host.PipelineConfig{Subject: abi.SubjectProposal, Stages: []host.StageConfig{{Plugin: "accept"}}}
				cfg.OnlyPipeline = "p"
			}
			cfg.CacheDir = testwasm.CacheDir()
			h, err := host.New(context.Background(), cfg)
			require.Error(t, err)
			assert.Nil(t, h)
			assert.ErrorIs(t, err, host.ErrPoolBudget)
			var ce *host.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "pool_memory_budget", ce.Field)
			assert.Equal(t, tt.want, ce.Reason)
		})
	}
}

// TestWarmPoolsServesFirstRunsWithoutInstantiating: as many concurrent runs
// as the pool holds, on a host New warmed, make no instance.
func TestWarmPoolsServesFirstRunsWithoutInstantiating(t *testing.T) {
	const size = 4
	cfg := acceptAllConfig(t, mib)
	cfg.PoolSize, cfg.WarmPools = size, true
	h := hosttest.New(t, cfg)
	var wg sync.WaitGroup
	verdicts := make([]abi.Verdict, size)
	for i := range size {
		wg.Go(func() {
			d, err := h.Check(context.Background(), "p", []byte(`{"actions":[{"tool":"x"}]}`), host.RunOptions{})
			if err == nil {
				verdicts[i] = d.Verdict
			}
		})
	}
	wg.Wait()
	for i, v := range verdicts {
		assert.Equal(t, abi.Accepted, v, "run %d", i)
	}
	created, discarded := host.InstanceCounts(h, "accept")
	assert.EqualValues(t, size, created, "every run found a ready instance")
	assert.Zero(t, discarded)
}

// TestWarmPoolsFailureRefusesHost: with WarmPools, an instance a pool
// cannot make refuses the host as a failed load does. Without it, New makes
// only the load-time probe, and a run on it is decided.
func TestWarmPoolsFailureRefusesHost(t *testing.T) {
	errNoInstance := errors.New("no instance today")
	tests := []struct {
		name string
		warm bool
	}{{name: "warmed at New", warm: true}, {name: "made on first use"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := acceptAllConfig(t, mib)
			cfg.PoolSize, cfg.WarmPools, cfg.CacheDir = 2, tt.warm, testwasm.CacheDir()
			cfg = host.WithInstantiateFault(cfg, errNoInstance)
			h, err := host.New(context.Background(), cfg)
			if tt.warm {
				require.Error(t, err)
				assert.Nil(t, h)
				assert.ErrorIs(t, err, errNoInstance)
				var le *host.LoadError
				require.ErrorAs(t, err, &le)
				assert.Equal(t, "accept", le.Plugin)
				return
			}
			require.NoError(t, err)
			t.Cleanup(func() { _ = h.Close(context.Background()) })
			d, err := h.Check(context.Background(), "p", []byte(`{"actions":[{"tool":"x"}]}`), host.RunOptions{})
			require.NoError(t, err)
			assert.Equal(t, abi.Accepted, d.Verdict)
		})
	}
}
