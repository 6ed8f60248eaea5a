package host

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/engine"
)

// admit takes one of MaxConcurrentRuns run slots. When none is free it
// waits, as one of at most MaxQueuedRuns waiters, until ctx is done or
// QueueTimeout passes. It returns the slot's release and, when the run was
// not admitted, a *engine.Fault whose reason is host_overloaded (or
// canceled); release is then a no-op.
func (h *Host) admit(ctx context.Context) (release func(), refused error) {
	select {
	case h.runSlots <- struct{}{}:
		return func() { <-h.runSlots }, nil
	default:
	}
	if n := h.queued.Add(1); n > int64(h.cfg.MaxQueuedRuns) {
		h.queued.Add(-1)
		return func() {}, &engine.Fault{Reason: abi.ReasonHostOverloaded,
			Err: fmt.Errorf("%d runs in progress and %d waiting; queue full", cap(h.runSlots), h.cfg.MaxQueuedRuns)}
	}
	defer h.queued.Add(-1)
	wctx, cancel := context.WithTimeout(ctx, h.cfg.QueueTimeout)
	defer cancel()
	select {
	case h.runSlots <- struct{}{}:
		return func() { <-h.runSlots }, nil
	case <-wctx.Done():
		reason := abi.ReasonHostOverloaded
		if ctx.Err() != nil {
			reason = waitReason(ctx)
		}
		return func() {}, &engine.Fault{Reason: reason,
			Err: fmt.Errorf("no run slot free (%d in progress): %w", cap(h.runSlots), wctx.Err())}
	}
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

// reportOutcome feeds a stage's result to its plugin's breaker and records
// a change of quarantine in the log.
func (h *Host) reportOutcome(s *stage, probe bool, r StageResult) {
	tr := s.breaker.report(h.cfg.Now(), probe, outcomeOf(r))
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
