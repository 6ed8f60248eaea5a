//go:build unix

package host_test

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// BenchmarkGuestJSON is the gate call through the host (deadline enforced,
// pool of one) for the guests' JSON comparisons: static-verify on the
// 10-action proposal (request, proposal, catalog answers, response) and exec
// on one tool call. Beside ns/op it reports cpu-ns/op, the process's CPU
// time per call, which a loaded machine inflates less than the wall clock
// (the figure to compare when other work shares the cores).
func BenchmarkGuestJSON(b *testing.B) {
	ctx := context.Background()
	store := hosttest.GitHubCatalog(b)
	sessions := session.NewMemStore()
	if _, err := session.Activate(ctx, sessions, store.Snapshot(), "bench", "create_pull_request"); err != nil {
		b.Fatal(err)
	}
	call, _ := json.Marshal(abi.ToolCall{ID: "call_1", Tool: "create_pull_request",
		Parameters: json.RawMessage(`{"owner":"octo-org","repo":"widgets","title":"Fix the flaky test","head":"fix-flaky","base":"main","body":"Retries the network call."}`)})
	gates := []struct {
		name    string
		cfg     host.Config
		subject []byte
	}{
		{"static-verify", host.Config{
			Plugins:   map[string]host.PluginConfig{"g": {Path: staticVerifyWasm}},
			Catalog:   store,
			Pipelines: hosttest.OnePipeline("g", "catalog"),
			PoolSize:  1,
		}, hosttest.ReadFile(b, "testdata/static-verify/bench-10-actions.json")},
		{"exec", host.Config{
			Plugins:   map[string]host.PluginConfig{"g": {Path: execWasm}},
			Catalog:   store,
			Sessions:  sessions,
			Pipelines: map[string]host.PipelineConfig{"p": hosttest.ExecPipeline("g")},
			PoolSize:  1,
		}, call},
	}
	for _, g := range gates {
		b.Run(g.name, func(b *testing.B) {
			h := hosttest.New(b, g.cfg)
			check := func() {
				d, err := h.Check(ctx, "p", g.subject, host.RunOptions{Session: "bench"})
				if err != nil || d.Verdict != abi.Accepted {
					b.Fatal(err, d.Verdict)
				}
			}
			check() // warm the instance outside the figure
			start := cpuTime(b)
			for b.Loop() {
				check()
			}
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far, in ns.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
