package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/testing/guestcalls"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	gate "github.com/gatehost/gatehost/plugins/policy"
	cedarpolicy "github.com/gatehost/gatehost/policy"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

func TestMain(m *testing.M) { testwasm.Main(m, nil) }

// hundredPolicies: 100 policies that all apply to a write_file call (as
// in package policy's BenchmarkEvaluate100); exactly one permits it.
func hundredPolicies() string {
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, "@id(\"permit-%d\") permit(principal, action in Action::\"mcp.fs:*\", resource)\nwhen { context.paths has path && context.paths.path like \"/srv/share/public/team%d/*\" };\n", i, i)
	}
	for i := range 40 {
		fmt.Fprintf(&b, "@id(\"forbid-%d\") forbid(principal, action == Action::\"mcp.fs:write_file\", resource)\nwhen { context.arguments.content like \"*MARKER-%d*\" };\n", i, i)
	}
	for i := range 10 {
		fmt.Fprintf(&b, "@id(\"claims-%d\") forbid(principal, action in Action::\"destructive\", resource)\nwhen { principal.claims has emails && principal.claims.emails.contains(\"blocked%d@example.com\") };\n", i, i)
	}
	return b.String()
}

// BenchmarkPolicyGate100: one write_file call against 100 policies through
// the gate's Go code over the SDK's JSON path (native), and through the
// wasm module in the host, with the stage deadline, no event log and a
// pool of one (wasm). wasm/native is the cost of the sandbox.
func BenchmarkPolicyGate100(b *testing.B) {
	ctx := context.Background()
	root, err := testwasm.Root()
	if err != nil {
		b.Fatal(err)
	}
	tools, err := catalog.Load(filepath.Join(root, "examples/policies/server-filesystem.tools.json"), catalog.ImportOptions{Format: catalog.FormatMCP, Server: "fs"})
	if err != nil {
		b.Fatal(err)
	}
	store, err := catalog.NewStore(tools...)
	if err != nil {
		b.Fatal(err)
	}
	cfg, _ := json.Marshal(gate.Config{Policies: []cedarpolicy.Source{{File: "bench.cedar", Text: hundredPolicies()}}})
	call := []byte(`{"tool":"write_file","parameters":{"path":"/srv/share/public/team42/notes/../report.md","content":"A quarterly report with nothing secret in it."}}`)
	b.Run("native", func(b *testing.B) {
		var abiTools []abi.Tool
		for _, t := range store.Snapshot().List() {
			abiTools = append(abiTools, t.ABI())
		}
		h := gatetest.NewHost(abiTools...)
		req := abi.Request{ABIVersion: abi.MajorVersion, SubjectKind: abi.SubjectToolCall, Subject: call, Config: cfg,
			Context: abi.Context{Now: "2026-01-01T00:00:00Z"}}
		inst := gatetest.NewInstance(gate.Gate, h)
		b.ReportAllocs()
		for b.Loop() {
			if r, err := inst.Evaluate(ctx, req); err != nil || r.Verdict != abi.Accepted {
				b.Fatal(err, r)
			}
		}
	})
	newHost := func(b *testing.B, ctx context.Context, cacheDir string) *host.Host {
		mod, err := testwasm.Go("plugins/policy/wasm")
		if err != nil {
			b.Fatal(err)
		}
		h, err := host.New(ctx, host.Config{
			Plugins: map[string]host.PluginConfig{"policy": {Path: mod}},
			Catalog: store, CacheDir: cacheDir, PoolSize: 1,
			Pipelines: map[string]host.PipelineConfig{"calls": {Subject: abi.SubjectToolCall, Stages: []host.StageConfig{{
				Plugin: "policy", Capabilities: []string{"catalog"}, Config: cfg, Timeout: time.Minute,
			}}}},
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { h.Close(context.Background()) })
		return h
	}
	check := func(b *testing.B, h *host.Host) {
		d, err := h.Check(ctx, "calls", call, host.RunOptions{})
		if err != nil || d.Verdict != abi.Accepted {
			b.Fatal(err, d)
		}
	}
	b.Run("wasm", func(b *testing.B) {
		h := newHost(b, ctx, testwasm.CacheDir())
		b.ReportAllocs()
		for b.Loop() {
			check(b, h)
		}
	})
	// The guest's function calls per run: the same on every machine and
	// under any load (internal/testing/guestcalls). Its time is not the
	// gate's: every call goes through a listener.
	b.Run("wasm-calls", func(b *testing.B) {
		c := guestcalls.New()
		h := newHost(b, c.Context(ctx), b.TempDir())
		c.Measure(b, func() { check(b, h) })
	})
}
