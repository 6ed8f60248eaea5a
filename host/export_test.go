package host

import (
	"context"
	"log/slog"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/engine"
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
	rc := &runContext{host: n.h, granted: []string{abi.CapabilityQuery}}
	return sdk.DecodeAnswer(calls{slog.Default()}.Call(context.Background(), rc, op, req))
}

// CallEnvelope implements sdk.EnvelopeCaller, as the guest's host does.
func (n *NativeQueryHost) CallEnvelope(op string, req []byte) ([]byte, error) {
	rc := &runContext{host: n.h, granted: []string{abi.CapabilityQuery}}
	return calls{slog.Default()}.Call(context.Background(), rc, op, req), nil
}

func (n *NativeQueryHost) Log(sdk.Level, string) {}

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
