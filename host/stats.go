package host

import (
	"cmp"
	"slices"
)

// PoolStats describes the instance pool of one plugin compiled for one
// memory limit.
type PoolStats struct {
	Plugin string
	// MemoryPages is the memory limit of this variant, in 64 KiB pages.
	MemoryPages uint32
	// Size is the pool's capacity (Config.PoolSize, lowered to what
	// Config.PoolMemoryBudget holds at MemoryPages); Live the instances
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

// Runs reports the runs holding a slot (at most MaxConcurrentRuns) and
// those queued for one (at most MaxQueuedRuns).
func (h *Host) Runs() (inProgress, queued int) {
	return len(h.runSlots), int(h.queued.Load())
}
