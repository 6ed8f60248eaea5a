package host

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
