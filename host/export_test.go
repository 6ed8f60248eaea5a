package host

import (
	"context"
	"log/slog"

	"github.com/gatehost/gatehost/sdk"
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

// NativeQueryHost serves the query capability in-process through the same
// code path a guest's call takes (calls.Call), so a gate run natively sees
// exactly the answers its wasm build sees.
type NativeQueryHost struct{ h *Host }

// NewNativeQueryHost returns an sdk.Host with the query capability granted
// over domains.
func NewNativeQueryHost(domains map[string]Domain) *NativeQueryHost {
	return &NativeQueryHost{h: &Host{cfg: Config{Domains: domains}}}
}

func (n *NativeQueryHost) Call(op string, req []byte) ([]byte, error) {
	rc := &runContext{host: n.h, granted: []string{CapabilityQuery}}
	return sdk.DecodeAnswer(calls{slog.Default()}.Call(context.Background(), rc, op, req))
}

func (n *NativeQueryHost) Log(sdk.Level, string) {}
