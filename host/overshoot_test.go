package host_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// runawayOvershoots runs a spinning guest n times under deadline and returns
// how far past the deadline each stage ended (stage wall time − deadline),
// sorted. The stage's clock starts before the deadline's, so this slightly
// over-reports.
func runawayOvershoots(tb testing.TB, n int, deadline time.Duration) []time.Duration {
	tb.Helper()
	wasm, err := testwasm.WAT("testdata/hostile/infinite-loop.wat")
	if err != nil {
		tb.Fatal(err)
	}
	h := hosttest.New(tb, host.Config{
		Plugins:    map[string]host.PluginConfig{"loop": {Module: wasm}},
		Pipelines:  map[string]host.PipelineConfig{"p": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "loop", Timeout: deadline}}}},
		PoolSize:   1,
		Quarantine: host.QuarantineConfig{Disabled: true},
		// A stopped guest's slot comes back only once the guest has
		// returned, which on a busy machine can take longer than the
		// default queue wait: this test measures overshoot, not admission.
		QueueTimeout: 2 * time.Minute,
	})
	out := make([]time.Duration, 0, n)
	for range n {
		d, err := h.Check(context.Background(), "p", []byte(okProposal), host.RunOptions{})
		if err != nil {
			tb.Fatal(err)
		}
		switch st := d.Stages[0]; st.Reason {
		case abi.ReasonPluginTimeout:
			out = append(out, time.Duration(st.DurationMicros)*time.Microsecond-deadline)
		case abi.ReasonHostOverloaded:
			// The previous run's guest had not yet returned its slot, so
			// this run waited for it and its timeout is the host's
			// shortage, not the gate's: refused all the same, and not an
			// overshoot figure.
		default:
			tb.Fatalf("a runaway guest ended %q (verdict %s), want plugin_timeout or host_overloaded", st.Reason, d.Verdict)
		}
		if d.Verdict == abi.Accepted {
			tb.Fatal("a runaway guest's run was accepted")
		}
	}
	if len(out) == 0 {
		tb.Skip("every run waited for the previous guest's slot: no overshoot to report on this machine now")
	}
	slices.Sort(out)
	return out
}

// TestRunawayLoopOvershoot logs how far past its deadline a runaway loop is
// stopped. It asserts nothing about time (the machine may be busy); the
// figure is for reading: `go test ./host -run Overshoot -v`.
func TestRunawayLoopOvershoot(t *testing.T) {
	const deadline = 50 * time.Millisecond
	o := runawayOvershoots(t, 20, deadline)
	t.Logf("runaway loop, deadline %v, 20 runs: overshoot min %v, median %v, p90 %v, max %v",
		deadline, o[0], o[len(o)/2], o[len(o)*9/10], o[len(o)-1])
}

// BenchmarkRunawayLoop reports the overshoot past a 20 ms deadline as the
// metrics overshoot-µs (mean) and max-overshoot-µs.
func BenchmarkRunawayLoop(b *testing.B) {
	const deadline = 20 * time.Millisecond
	o := runawayOvershoots(b, b.N, deadline)
	var sum time.Duration
	for _, d := range o {
		sum += d
	}
	b.ReportMetric(float64(sum.Microseconds())/float64(len(o)), "overshoot-µs")
	b.ReportMetric(float64(o[len(o)-1].Microseconds()), "max-overshoot-µs")
}
