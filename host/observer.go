package host

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/gatehost/gatehost/internal/engine"
)

// Hooks are callbacks the host makes as it works, for metrics and tracing
// without the host depending on a metrics library. Every field is optional.
// Hooks run synchronously on the run's goroutine: keep them fast, and never
// call back into the Host from one.
type Hooks struct {
	// Decided is called once per Check that produced a Decision, after the
	// event log append. err is that append's failure (ErrEventLog), if any;
	// the Decision is then inconclusive. Each StageResult's Err reports the
	// plugin failure the host decided, if any.
	Decided func(d *Decision, err error)
	// Quarantine is called when a plugin enters quarantine (true) or a probe
	// lifts it (false).
	Quarantine func(plugin string, quarantined bool)
}

func (h *Host) decided(d *Decision, err error) {
	if h.cfg.Hooks != nil && h.cfg.Hooks.Decided != nil {
		h.cfg.Hooks.Decided(d, err)
	}
}

func (h *Host) quarantineChanged(plugin string, quarantined bool) {
	if h.cfg.Hooks != nil && h.cfg.Hooks.Quarantine != nil {
		h.cfg.Hooks.Quarantine(plugin, quarantined)
	}
}

// PoolStats describes the instance pool of one plugin compiled for one
// memory limit.
type PoolStats struct {
	Plugin string
	// MemoryPages is the memory limit of this variant, in 64 KiB pages.
	MemoryPages uint32
	// Size is the pool's capacity (Config.PoolSize); Live the instances
	// that exist, idle or in use; Idle those ready for a run.
	Size, Live, Idle int
	// Created and Discarded count instances over the pool's life;
	// discarded ones failed and were never reused.
	Created, Discarded int64
}

// PoolStats reports every plugin pool, sorted by plugin and memory limit.
func (h *Host) PoolStats() []PoolStats {
	out := make([]PoolStats, 0, len(h.plugins))
	for v, p := range h.plugins {
		out = append(out, PoolStats{
			Plugin: v.plugin, MemoryPages: v.pages,
			Size: cap(p.pool.slots), Live: len(p.pool.slots), Idle: len(p.pool.idle),
			Created: p.pool.created.Load(), Discarded: p.pool.discarded.Load(),
		})
	}
	slices.SortFunc(out, func(a, b PoolStats) int {
		return cmp.Or(cmp.Compare(a.Plugin, b.Plugin), cmp.Compare(a.MemoryPages, b.MemoryPages))
	})
	return out
}

// Warm fills every plugin's pool to its size, so that the first runs pay
// no instantiation (about 6 ms and 8 MB of garbage each for a Go guest). A
// server reports ready only after Warm. Call it before serving runs; it
// returns the first instantiation failure, wrapped in a *LoadError.
func (h *Host) Warm(ctx context.Context) error {
	if h.closed.Load() {
		return ErrClosed
	}
	for _, v := range slices.SortedFunc(maps.Keys(h.plugins), func(a, b variant) int {
		return cmp.Or(cmp.Compare(a.plugin, b.plugin), cmp.Compare(a.pages, b.pages))
	}) {
		if err := h.plugins[v].pool.warm(ctx); err != nil {
			return &LoadError{Plugin: v.plugin, Err: fmt.Errorf("warm pool: %w", err)}
		}
	}
	return nil
}

// warm takes instances until the pool is full, creating the missing ones,
// then returns them all.
func (p *pool) warm(ctx context.Context) error {
	var got []*engine.Instance
	defer func() {
		for _, inst := range got {
			p.put(inst, true)
		}
	}()
	for range cap(p.slots) {
		inst, err := p.get(ctx)
		if err != nil {
			return err
		}
		got = append(got, inst)
	}
	return nil
}

// Runs reports the runs holding a slot (at most MaxConcurrentRuns) and
// those queued for one (at most MaxQueuedRuns).
func (h *Host) Runs() (inProgress, queued int) {
	return len(h.runSlots), int(h.queued.Load())
}
