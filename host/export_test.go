package host

import (
	"context"

	"github.com/gatehost/gatehost/internal/engine"
)

// InstanceCounts reports how many instances of the named plugin (all memory
// variants) the host has created and discarded as unhealthy.
func InstanceCounts(h *Host, plugin string) (created, discarded int64) {
	for v, p := range h.plugins {
		if v.plugin == plugin {
			created += p.pool.created.Load()
			discarded += p.pool.discarded.Load()
		}
	}
	return created, discarded
}

// RunsInProgress and RunsQueued report the run admission state.
func RunsInProgress(h *Host) int { return len(h.runSlots) }
func RunsQueued(h *Host) int64   { return h.queued.Load() }

// WithInstantiateFault returns cfg with every instance a pool makes after
// the load-time probe failing with err.
func WithInstantiateFault(cfg Config, err error) Config {
	cfg.onInstantiate = func() error { return err }
	return cfg
}

// WithoutInterrupt returns cfg with guests run without the deadline check,
// so a benchmark can measure what the check costs. A looping guest is then
// never stopped: benchmarks only.
func WithoutInterrupt(cfg Config) Config {
	cfg.interrupt = engine.InterruptNone
	return cfg
}

// WithRuntimeInterrupt returns cfg with guests stopped by the runtime's own
// check (engine.InterruptRuntime) instead of the load-time rewrite, so a
// benchmark can compare the two.
func WithRuntimeInterrupt(cfg Config) Config {
	cfg.interrupt = engine.InterruptRuntime
	return cfg
}

// FillPool creates instances of the named plugin until its pool holds
// PoolSize idle ones, and returns how many it holds and their guest memory
// in bytes.
func FillPool(ctx context.Context, h *Host, plugin string) (n int, guestBytes uint64, err error) {
	for v, p := range h.plugins {
		if v.plugin != plugin {
			continue
		}
		var held []*engine.Instance
		for range cap(p.pool.slots) {
			inst, err := p.pool.get(ctx)
			if err != nil {
				return 0, 0, err
			}
			held = append(held, inst)
		}
		for _, inst := range held {
			guestBytes += inst.MemoryBytes()
			p.pool.put(inst, true)
		}
		n += len(held)
	}
	return n, guestBytes, nil
}
