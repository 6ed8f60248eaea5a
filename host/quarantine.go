package host

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/eventlog"
)

// Quarantine defaults (QuarantineConfig).
const (
	DefaultQuarantineFailures   = 5
	DefaultQuarantineWindow     = 30 * time.Second
	DefaultQuarantineBackoff    = time.Second
	DefaultQuarantineMaxBackoff = 5 * time.Minute
)

// QuarantineConfig sets when a failing plugin is quarantined: after Failures
// plugin faults (plugin_trap, plugin_timeout, plugin_out_of_memory,
// abi_violation) within Window, every stage using the plugin answers
// inconclusive/plugin_quarantined without calling the guest for Backoff;
// then one probe call goes through. A probe that faults doubles the backoff,
// up to MaxBackoff; a probe that answers lifts the quarantine. Zero fields
// take the defaults.
type QuarantineConfig struct {
	// Disabled turns quarantine off: every run calls the guest.
	Disabled   bool
	Failures   int
	Window     time.Duration
	Backoff    time.Duration
	MaxBackoff time.Duration
}

func (q QuarantineConfig) withDefaults() QuarantineConfig {
	if q.Failures == 0 {
		q.Failures = DefaultQuarantineFailures
	}
	if q.Window == 0 {
		q.Window = DefaultQuarantineWindow
	}
	if q.Backoff == 0 {
		q.Backoff = DefaultQuarantineBackoff
	}
	if q.MaxBackoff == 0 {
		q.MaxBackoff = DefaultQuarantineMaxBackoff
	}
	return q
}

// outcome is what a stage's run says about its plugin's health.
type outcome int

const (
	// neutral: says nothing about the plugin (canceled, overloaded, not run).
	neutral outcome = iota
	// healthy: the guest answered within the ABI.
	healthy
	// faulty: a plugin fault the host decided.
	faulty
)

// quarantineState is a plugin's quarantine state.
type quarantineState int

const (
	closed   quarantineState = iota // calls go through; faults are counted
	open                            // quarantined until `until`
	halfOpen                        // one probe call is in flight
)

// transition is a change of quarantine state worth recording.
type transition struct {
	quarantined bool // true: entered quarantine; false: lifted
	failures    int
	backoff     time.Duration
	until       time.Time
}

// quarantine is the crash-loop protection of one plugin, a circuit breaker.
// Its clock is passed in, so a test can play a timeline.
type quarantine struct {
	cfg QuarantineConfig

	mu       sync.Mutex
	state    quarantineState
	faults   []time.Time // within the window, oldest first; at most cfg.Failures
	backoff  time.Duration
	until    time.Time
	probeOut bool
}

func newQuarantine(cfg QuarantineConfig) *quarantine { return &quarantine{cfg: cfg} }

// admit says whether a call may go to the guest at now. When it may not, it
// returns the end of the quarantine. probe is true for the single call let
// through after a backoff; its outcome must be reported.
func (b *quarantine) admit(now time.Time) (ok, probe bool, until time.Time) {
	if b == nil || b.cfg.Disabled {
		return true, false, time.Time{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case open:
		if now.Before(b.until) {
			return false, false, b.until
		}
		b.state, b.probeOut = halfOpen, true
		return true, true, time.Time{}
	case halfOpen:
		return false, false, b.until
	}
	return true, false, time.Time{}
}

// report records the outcome of an admitted call and returns a transition
// when the call changed the quarantine state.
func (b *quarantine) report(now time.Time, probe bool, o outcome) *transition {
	if b == nil || b.cfg.Disabled {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probeOut = false
		switch o {
		case healthy:
			b.state, b.faults, b.backoff = closed, b.faults[:0], 0
			return &transition{quarantined: false}
		case faulty:
			b.backoff = min(2*b.backoff, b.cfg.MaxBackoff)
			return b.openLocked(now)
		}
		b.state = open // a probe that said nothing: try again at once
		return nil
	}
	if o != faulty || b.state != closed {
		return nil
	}
	cut := now.Add(-b.cfg.Window)
	i := 0
	for i < len(b.faults) && !b.faults[i].After(cut) {
		i++
	}
	b.faults = append(b.faults[i:], now)
	if len(b.faults) < b.cfg.Failures {
		return nil
	}
	b.backoff = b.cfg.Backoff
	return b.openLocked(now)
}

func (b *quarantine) openLocked(now time.Time) *transition {
	b.state, b.until = open, now.Add(b.backoff)
	return &transition{quarantined: true, failures: len(b.faults), backoff: b.backoff, until: b.until}
}

// outcomeOf says what a stage's result tells about its plugin's health.
func outcomeOf(r StageResult) outcome {
	if r.err == nil {
		return healthy
	}
	switch r.err.Code {
	case abi.ReasonPluginTrap, abi.ReasonPluginTimeout, abi.ReasonPluginOutOfMemory, abi.ReasonABIViolation:
		return faulty
	}
	return neutral
}

// reportOutcome feeds a stage's result to its plugin's quarantine and records
// a change of quarantine in the log.
func (h *Host) reportOutcome(s *stage, probe bool, r StageResult) {
	tr := s.quarantine.report(h.cfg.Now(), probe, outcomeOf(r))
	if tr == nil {
		return
	}
	h.quarantineChanged(s.cfg.Plugin, tr.quarantined)
	rec := eventlog.Record{Kind: "quarantine_lifted", Plugin: s.cfg.Plugin, Stage: s.cfg.Name,
		ModuleSHA256: s.plugin.sha256, ABIVersion: abi.MajorVersion}
	if tr.quarantined {
		data, _ := json.Marshal(map[string]any{
			"failures": tr.failures, "backoff_ms": tr.backoff.Milliseconds(),
			"until": tr.until.UTC().Format(time.RFC3339Nano), "last_reason": r.Reason,
		})
		rec.Kind, rec.Reason, rec.Data = "quarantine", abi.ReasonPluginQuarantined, data
		h.logger.Warn("host: plugin quarantined", "plugin", s.cfg.Plugin, "failures", tr.failures,
			"backoff", tr.backoff, "until", tr.until, "last_reason", r.Reason)
	} else {
		h.logger.Info("host: plugin quarantine lifted", "plugin", s.cfg.Plugin)
	}
	if h.log == nil {
		return
	}
	if _, err := h.log.Append(rec); err != nil {
		h.logger.Error("host: quarantine not recorded", "plugin", s.cfg.Plugin, "err", err)
	}
}
