package host_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/testing/guestcalls"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/plugins/exec"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

// snapCatalog and setSessions are exec's views over the host's own types,
// for the pure-function baseline.
type snapCatalog struct{ s *catalog.Snapshot }

func (c snapCatalog) Get(name string) (abi.Tool, bool, error) {
	t, ok := c.s.Get(name)
	return t.ABI(), ok, nil
}

type setSessions struct {
	id  string
	set *session.Set
}

func (s setSessions) Get(tool string) (abi.SessionGetAnswer, error) {
	return s.set.Lookup(s.id, tool), nil
}

// BenchmarkExec authorizes one create_pull_request call of an activated
// session against the 117-tool GitHub catalog: the pure function on the
// host's types (authorize), the gate's Go code through the SDK's JSON path
// (native), and the wasm gate through the host with the deadline enforced
// and no event log (wasm). wasm/native is the cost of the sandbox.
func BenchmarkExec(b *testing.B) {
	ctx := context.Background()
	store := hosttest.GitHubCatalog(b)
	snap := store.Snapshot()
	sessions := session.NewMemStore()
	set, err := session.Activate(ctx, sessions, snap, "bench", "create_pull_request")
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := exec.ParseConfig(hosttest.GitHubExecConfig)
	if err != nil {
		b.Fatal(err)
	}
	call, _ := json.Marshal(abi.ToolCall{ID: "call_1", Tool: "create_pull_request",
		Parameters: json.RawMessage(`{"owner":"octo-org","repo":"widgets","title":"Fix the flaky test","head":"fix-flaky","base":"main","body":"Retries the network call."}`)})

	b.Run("authorize", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := exec.Authorize(exec.Call{Tool: "create_pull_request", Session: "bench"}, snapCatalog{snap}, setSessions{"bench", set}, cfg)
			if err != nil || !out.Allowed {
				b.Fatal(err, out.Code)
			}
		}
	})
	b.Run("native", func(b *testing.B) {
		inst := gatetest.NewInstance(exec.Gate, gatetest.SinglePass(hosttest.NativeExecHost(snap, set, "bench")))
		req := abi.Request{SubjectKind: abi.SubjectToolCall, Subject: call, Config: hosttest.GitHubExecConfig,
			Context: abi.Context{CatalogGeneration: snap.Generation(), Session: "bench"}}
		b.ReportAllocs()
		for b.Loop() {
			if r, err := inst.Evaluate(ctx, req); err != nil || r.Verdict != abi.Accepted {
				b.Fatal(err, r.Verdict)
			}
		}
	})
	hc := host.Config{
		Plugins:   map[string]host.PluginConfig{"exec": {Path: execWasm}},
		Catalog:   store,
		Sessions:  sessions,
		Pipelines: map[string]host.PipelineConfig{"exec": hosttest.ExecPipeline("exec")},
		PoolSize:  1,
	}
	check := func(b *testing.B, h *host.Host) {
		d, err := h.Check(ctx, "exec", call, host.RunOptions{Session: "bench"})
		if err != nil || d.Verdict != abi.Accepted {
			b.Fatal(err, d.Verdict)
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
