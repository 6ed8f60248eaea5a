package host

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
