package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/plugins/merge"
	"github.com/gatehost/gatehost/plugins/merge/mergetest"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

// BenchmarkMergeExtract2000Lines runs the merge gate over a change to a real
// 1,999-line Go file (testdata/merge): natively (ExtractChanges alone, and
// the whole gate through the SDK's JSON path) and through the host (wasm,
// deadline enforced, no event log). No check is configured and a waiver
// covers the file, so the gate accepts (the instance is reused, as an
// inconclusive answer would discard it) and the figure is the gate's own
// work: decoding, parsing both sides, diffing, scanning, policy call.
func BenchmarkMergeExtract2000Lines(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "testdata/merge/bench-2000-lines.json"))
	require.NoError(b, err)
	var m abi.Merge
	require.NoError(b, json.Unmarshal(raw, &m))
	m.Waiver = &abi.Waiver{Reason: "benchmark", ApprovedBy: "bench", Scope: []string{"**"}}
	raw, err = json.Marshal(m)
	require.NoError(b, err)
	ctx := context.Background()
	b.Run("native-extract", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := merge.ExtractChanges(m.FileChanges)
			if len(c.Symbols) == 0 {
				b.Fatal("no symbols")
			}
		}
	})
	b.Run("native-gate", func(b *testing.B) {
		req := abi.Request{SubjectKind: abi.SubjectMerge, Subject: raw}
		inst := gatetest.NewInstance(merge.Gate, &mergetest.Host{})
		b.ReportAllocs()
		for b.Loop() {
			resp, err := inst.Evaluate(ctx, req)
			if err != nil || resp.Basis != merge.BasisWaived {
				b.Fatal(err, resp)
			}
		}
	})
	for _, v := range deadlineVariants {
		b.Run("wasm-gate"+v.suffix, func(b *testing.B) {
			h := hosttest.MergeHost(b, "", v.cfg)
			b.ReportAllocs()
			for b.Loop() {
				d, err := h.Check(ctx, "none", raw, host.RunOptions{})
				if err != nil || d.Stages[0].Basis != merge.BasisWaived {
					b.Fatal(err, d.Stages[0])
				}
			}
		})
	}
}
