package host_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/plugins/preconditions"
	staticverify "github.com/gatehost/gatehost/plugins/static-verify"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

// admissionRig is the admission pipeline of docs/PERFORMANCE.md: static-verify
// (catalog) then preconditions (query, the github-bench domain), over the
// 10-action proposal against the 117-tool GitHub catalog.
type admissionRig struct {
	subj    []byte
	cfg     host.Config
	tools   []abi.Tool
	domains map[string]host.Domain
}

func newAdmissionRig(tb testing.TB) *admissionRig {
	tb.Helper()
	store := hosttest.GitHubCatalog(tb)
	var db map[string]map[string]any
	require.NoError(tb, json.Unmarshal(hosttest.ReadFile(tb, "testdata/domains/github-bench/db.json"), &db))
	domains := map[string]host.Domain{"github": {
		Catalog: hosttest.LoadCatalog(tb, "testdata/domains/github-bench/domain.yaml"),
		Source:  hosttest.Docs(db),
	}}
	r := &admissionRig{subj: hosttest.ReadFile(tb, "testdata/static-verify/bench-10-actions.json"), domains: domains}
	for _, t := range store.Snapshot().List() {
		r.tools = append(r.tools, t.ABI())
	}
	r.cfg = host.Config{
		Plugins: map[string]host.PluginConfig{
			"static-verify": {Path: staticVerifyWasm},
			"preconditions": {Path: hosttest.PreconditionsWasm(tb)},
		},
		Catalog: store,
		Domains: domains,
		Pipelines: map[string]host.PipelineConfig{"admission": {Subject: abi.SubjectProposal, Stages: []host.StageConfig{
			{Name: "static-verify", Plugin: "static-verify", Capabilities: []string{"catalog", "schema"}},
			{Name: "preconditions", Plugin: "preconditions", Capabilities: []string{"query"}, Config: json.RawMessage(`{"domain":"github"}`)},
		}}},
	}
	return r
}

func (r *admissionRig) check(tb testing.TB, h *host.Host) {
	d, err := h.Check(context.Background(), "admission", r.subj, host.RunOptions{})
	if err != nil || d.Verdict != abi.Accepted {
		tb.Fatal(err, d.Verdict, d.Stages)
	}
}

// BenchmarkAdmission10Actions is the admission decision: static-verify and
// preconditions over the 10-action proposal (6 writes, 9 preconditions).
// native runs both gates' Go code through the SDK's JSON path; wasm is one
// decision at a time through the host (deadline on; no event log), and
// reports p50-µs and p99-µs per decision; wasm-parallel runs decisions on
// every core (pools of GOMAXPROCS instances per gate, warmed at start) and
// reports decisions/s.
func BenchmarkAdmission10Actions(b *testing.B) {
	r := newAdmissionRig(b)
	ctx := context.Background()
	b.Run("native", func(b *testing.B) {
		svHost := gatetest.SinglePass(gatetest.NewHost(r.tools...))
		qHost := host.NewNativeQueryHost(r.domains)
		now := time.Now().UTC().Format(time.RFC3339Nano)
		sv := abi.Request{SubjectKind: abi.SubjectProposal, Subject: r.subj}
		pc := abi.Request{SubjectKind: abi.SubjectProposal, Subject: r.subj, Config: json.RawMessage(`{"domain":"github"}`), Context: abi.Context{Now: now}}
		svInst, pcInst := gatetest.NewInstance(staticverify.Gate, svHost), gatetest.NewInstance(preconditions.Gate, qHost)
		b.ReportAllocs()
		for b.Loop() {
			r1, err := svInst.Evaluate(ctx, sv)
			if err != nil || r1.Verdict != abi.Accepted {
				b.Fatal(err, r1)
			}
			r2, err := pcInst.Evaluate(ctx, pc)
			if err != nil || r2.Verdict != abi.Accepted {
				b.Fatal(err, r2)
			}
		}
	})
	for _, v := range deadlineVariants {
		b.Run("wasm"+v.suffix, func(b *testing.B) {
			cfg := r.cfg
			cfg.PoolSize = 1
			h := hosttest.New(b, v.cfg(cfg))
			lat := make([]time.Duration, 0, 1024)
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				r.check(b, h)
				lat = append(lat, time.Since(t0))
			}
			reportPercentiles(b, lat)
		})
	}
	b.Run("wasm-parallel", func(b *testing.B) {
		cfg := r.cfg
		cfg.WarmPools = true // no timed decision makes an instance
		h := hosttest.New(b, cfg)
		var mu sync.Mutex
		lat := make([]time.Duration, 0, 1024)
		b.ReportAllocs()
		b.ResetTimer() // RunParallel does not: leave out the host's start
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			mine := make([]time.Duration, 0, 256)
			for pb.Next() {
				t0 := time.Now()
				r.check(b, h)
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
		reportPercentiles(b, lat)
	})
}

// reportPercentiles reports p50-µs and p99-µs of lat.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}
