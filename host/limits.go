package host

import (
	"context"
	"fmt"

	"github.com/gatehost/gatehost/abi"
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
