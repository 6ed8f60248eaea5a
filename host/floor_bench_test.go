package host_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// BenchmarkTrivialGate is the floor of a gate call on this build: an SDK
// gate (prefixdeny) that compares one tool name with one prefix, through
// the host with the stage deadline, a pool of one and no event log. What
// any gate's own work costs comes on top of it.
func BenchmarkTrivialGate(b *testing.B) {
	h := hosttest.New(b, host.Config{
		Plugins: map[string]host.PluginConfig{"deny": {Path: prefixDenyWasm}},
		Pipelines: map[string]host.PipelineConfig{"p": {Subject: abi.SubjectProposal, Stages: []host.StageConfig{{
			Plugin: "deny", Config: json.RawMessage(`{"denyPrefixes":["delete_"]}`),
		}}}},
		PoolSize: 1,
	})
	subj := []byte(`{"id":"p","actions":[{"id":"a","type":"tool_call","tool":"read_file","parameters":{"path":"x"}}]}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d, err := h.Check(ctx, "p", subj, host.RunOptions{}); err != nil || d.Verdict != abi.Accepted {
			b.Fatal(err, d)
		}
	}
}
