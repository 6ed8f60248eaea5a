package host_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/guestcalls"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	staticverify "github.com/gatehost/gatehost/plugins/static-verify"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

// BenchmarkStaticVerify10Actions checks the same 10-action proposal against
// the 117-tool GitHub catalog natively (the gate's Go code through the SDK's
// JSON path) and through the host (wasm, deadline enforced, no event log).
// Compare the two: the ratio is the cost of the sandbox.
func BenchmarkStaticVerify10Actions(b *testing.B) {
	subj := hosttest.ReadFile(b, "testdata/static-verify/bench-10-actions.json")
	store := hosttest.GitHubCatalog(b)
	ctx := context.Background()

	b.Run("native", func(b *testing.B) {
		var tools []abi.Tool
		for _, t := range store.Snapshot().List() {
			tools = append(tools, t.ABI())
		}
		h := gatetest.SinglePass(gatetest.NewHost(tools...))
		req := abi.Request{SubjectKind: abi.SubjectProposal, Subject: json.RawMessage(subj)}
		inst := gatetest.NewInstance(staticverify.Gate, h)
		b.ReportAllocs()
		for b.Loop() {
			resp, err := inst.Evaluate(ctx, req)
			if err != nil || resp.Verdict != abi.Accepted {
				b.Fatal(err, resp.Verdict)
			}
		}
	})
	hc := host.Config{
		Plugins:   map[string]host.PluginConfig{"sv": {Path: staticVerifyWasm}},
		Catalog:   store,
		Pipelines: hosttest.OnePipeline("sv", "catalog", "schema"),
		PoolSize:  1,
	}
	check := func(b *testing.B, h *host.Host) {
		d, err := h.Check(ctx, "p", subj, host.RunOptions{})
		if err != nil || d.Verdict != abi.Accepted {
			b.Fatal(err, d.Verdict, d.Stages[0].Reason)
		}
	}
	for _, v := range deadlineVariants {
		b.Run("wasm"+v.suffix, func(b *testing.B) {
			h := hosttest.New(b, v.cfg(hc))
			b.ReportAllocs()
			for b.Loop() {
				check(b, h)
			}
		})
	}
	b.Run("wasm-calls", func(b *testing.B) {
		c := guestcalls.New()
		h := hosttest.NewCounted(b, c, hc)
		c.Measure(b, func() { check(b, h) })
	})
}

// deadlineVariants run a wasm benchmark three times: as the host runs
// gates (the load-time interrupt rewrite stops a runaway guest; name
// "wasm"), with the runtime's own check instead ("wasm-runtimecheck":
// stock wazero's WithCloseOnContextDone, or wazy's built-in check alone),
// and without any check ("wasm-nodeadline"), which no production host
// does, to measure what each costs.
var deadlineVariants = []struct {
	suffix string
	cfg    func(host.Config) host.Config
}{
	{"", func(c host.Config) host.Config { return c }},
	{"-runtimecheck", host.WithRuntimeInterrupt},
	{"-nodeadline", host.WithoutInterrupt},
}
