package gatee2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/plugins/preconditions"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

// airlineNow is the clock of the tau2 airline policy: "The current time is
// 2024-05-15 15:00:00 EST."
var airlineNow = time.Date(2024, 5, 15, 15, 0, 0, 0, time.FixedZone("EST", -5*3600))

// readCollections reads tau2 data as collections (name → id → document).
func readCollections(t testing.TB, files map[string]string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for name, rel := range files {
		var c map[string]any
		require.NoError(t, json.Unmarshal(hosttest.ReadFile(t, rel), &c))
		out[name] = c
	}
	return out
}

func airlineCollections(t testing.TB) map[string]map[string]any {
	return readCollections(t, map[string]string{
		"flights":      "testdata/domains/airline/flights.json",
		"reservations": "testdata/domains/airline/reservations.json",
		"users":        "testdata/domains/airline/users.json",
	})
}

// withStatus returns a copy of colls in which the documents ids of
// collection coll have status set, as an earlier write would leave them.
func withStatus(colls map[string]map[string]any, coll, status string, ids ...string) map[string]map[string]any {
	out := maps.Clone(colls)
	c := maps.Clone(colls[coll])
	for _, id := range ids {
		doc := maps.Clone(c[id].(map[string]any))
		doc["status"] = status
		c[id] = doc
	}
	out[coll] = c
	return out
}

// pcRig runs the preconditions gate through the host (wasm) and natively
// over the same domains.
type pcRig struct {
	h       *host.Host
	native  *host.NativeQueryHost
	now     time.Time
	domains map[string]host.Domain
}

func newPCRig(t testing.TB, now time.Time, domains map[string]host.Domain) *pcRig {
	t.Helper()
	h := hosttest.New(t, host.Config{
		Plugins:   map[string]host.PluginConfig{"preconditions": {Path: hosttest.PreconditionsWasm(t)}},
		Pipelines: hosttest.PCPipelines(slices.Sorted(maps.Keys(domains))...),
		Domains:   domains,
		Now:       func() time.Time { return now },
	})
	return &pcRig{h: h, native: host.NewNativeQueryHost(domains), now: now, domains: domains}
}

// result is the part of an answer both runs must agree on.
type result struct {
	Verdict  abi.Verdict
	Reason   string
	Findings []abi.Finding
	// Evidence is the wasm run's (not compared with the native one's).
	Evidence map[string]any
}

// failedIDs lists the precondition ids of the blocking findings, in order,
// as code:id.
func (r result) failedIDs() []string {
	out := []string{}
	for _, f := range r.Findings {
		id, _ := f.Details["precondition"].(string)
		if id == "" {
			out = append(out, f.Code)
			continue
		}
		if f.Code == preconditions.CodeUnevaluable {
			id = "unevaluable:" + id
		}
		out = append(out, id)
	}
	return out
}

// check runs subject through pipeline DOMAIN-(dry|exec) in wasm and
// natively, requires the same verdict and findings, and returns them.
func (r *pcRig) check(t testing.TB, dom string, kind abi.SubjectKind, subject []byte) result {
	t.Helper()
	pipeline := dom + "-exec"
	if kind == abi.SubjectProposal {
		pipeline = dom + "-dry"
	}
	d, err := r.h.Check(context.Background(), pipeline, subject, host.RunOptions{})
	require.NoError(t, err)
	w := d.Stages[0]
	nat, err := gatetest.Evaluate(context.Background(), preconditions.Gate, abi.Request{
		SubjectKind: kind, Subject: subject, Config: json.RawMessage(fmt.Sprintf(`{"domain":%q}`, dom)),
		Context: abi.Context{Now: r.now.UTC().Format(time.RFC3339Nano), Capabilities: []string{"query"}},
	}, r.native)
	require.NoError(t, err)
	if nat.Findings == nil {
		nat.Findings = []abi.Finding{}
	}
	require.Equal(t, nat.Verdict, w.Verdict, "native and wasm verdicts differ; wasm reason %q evidence %v", w.Reason, w.Evidence)
	assert.Equal(t, nat.Reason, w.Reason)
	natF, _ := json.Marshal(nat.Findings)
	wF, _ := json.Marshal(w.Findings)
	assert.JSONEq(t, string(natF), string(wF), "native and wasm findings differ")
	if w.Verdict == abi.Accepted {
		assert.Equal(t, "preconditions_hold", w.Basis)
	}
	return result{Verdict: w.Verdict, Reason: w.Reason, Findings: w.Findings, Evidence: w.Evidence}
}

func proposal(t testing.TB, calls ...abi.ToolCall) []byte {
	t.Helper()
	p := abi.Proposal{Actions: []abi.Action{}}
	for _, c := range calls {
		p.Actions = append(p.Actions, abi.Action{ID: c.ID, Tool: c.Tool, Parameters: c.Parameters})
	}
	b, err := json.Marshal(p)
	require.NoError(t, err)
	return b
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, b, 0o644))
}
