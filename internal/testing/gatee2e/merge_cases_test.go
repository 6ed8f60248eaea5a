package gatee2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/plugins/merge"
	"github.com/gatehost/gatehost/plugins/merge/mergetest"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

func str(s string) *string { return &s }

// mergeSubject builds a subject for one combination of the gate's inputs.
func mergeSubject(violation, duplicate bool, policy, waiver string) abi.Merge {
	m := abi.Merge{FileChanges: []abi.FileChange{{Path: "pkg/a.go",
		Before: str("package p\n\nfunc A() {}\n"), After: str("package p\n\nfunc A() { println() }\n")}}}
	m.Footprint = []abi.SymbolRef{{File: "pkg/a.go", Symbol: "A"}, {File: "pkg/dup.go", Symbol: "*"}}
	if violation {
		m.Footprint = m.Footprint[1:]
	}
	if duplicate {
		m.FileChanges = append(m.FileChanges, abi.FileChange{Path: "pkg/dup.go", After: str("package p\n\nfunc D() {}\n\nfunc D() {}\n")})
	}
	switch policy {
	case "deny":
		m.FileChanges = append(m.FileChanges, abi.FileChange{Path: "deny/x.txt", After: str(""), ContentOmitted: true})
	case "unknown":
		m.FileChanges = append(m.FileChanges, abi.FileChange{Path: "error/x.txt", After: str(""), ContentOmitted: true})
	}
	switch waiver {
	case "applies":
		m.Waiver = &abi.Waiver{Reason: "test", ApprovedBy: "ops", Scope: []string{"**"}}
	case "out_of_scope":
		m.Waiver = &abi.Waiver{Reason: "test", ApprovedBy: "ops", Scope: []string{"docs/**"}}
	}
	return m
}

// TestMergeTruthTableNativeEqualsWasm drives the merge gate through every
// reachable combination of its decide inputs — containment violation,
// duplicate declaration, policy allow/deny/unavailable, build/test not
// configured (by the stage or by the host)/passed/failed/unavailable, and
// waiver none/applies/out of scope — through the host (wasm, real check
// commands, an embedder's policy) and natively (mergetest.Host), and
// requires the same verdict, basis, reason and finding codes, and the
// verdict merge.Decide gives for the inputs the evidence records.
func TestMergeTruthTableNativeEqualsWasm(t *testing.T) {
	h := hosttest.MergeHost(t, "")
	ctx := context.Background()
	worktree := t.TempDir()
	n := 0
	for _, violation := range []bool{false, true} {
		for _, duplicate := range []bool{false, true} {
			for _, policy := range []string{"allow", "deny", "unknown"} {
				for _, pipeline := range []string{"none", "missing", "pass", "fail", "broken"} {
					for _, waiver := range []string{"none", "applies", "out_of_scope"} {
						n++
						m := mergeSubject(violation, duplicate, policy, waiver)
						name := fmt.Sprintf("v=%t,d=%t,policy=%s,check=%s,waiver=%s", violation, duplicate, policy, pipeline, waiver)
						subj, err := json.Marshal(m)
						require.NoError(t, err)
						d, err := h.Check(ctx, pipeline, subj, host.RunOptions{Worktree: worktree})
						require.NoError(t, err, name)
						wasm := d.Stages[0]

						var cfg json.RawMessage
						if pipeline != "none" {
							cfg = json.RawMessage(`{"check":"` + pipeline + `"}`)
						}
						native, err := gatetest.Evaluate(ctx, merge.Gate, abi.Request{SubjectKind: abi.SubjectMerge, Subject: subj, Config: cfg}, &mergetest.Host{})
						require.NoError(t, err, name)

						assert.Equal(t, native.Verdict, wasm.Verdict, name)
						assert.Equal(t, native.Basis, wasm.Basis, name)
						assert.Equal(t, native.Reason, wasm.Reason, name)
						assert.Equal(t, codes(native.Findings), codes(wasm.Findings), name)
						assert.Equal(t, d.Verdict, wasm.Verdict, name)

						// The evidence's inputs give the same decision.
						in := wasm.Evidence["decision"].(map[string]any)
						out := merge.Decide(merge.Inputs{
							ContainmentViolations: atoi(t, in["containment_violations"]),
							DuplicateDeclarations: atoi(t, in["duplicate_declarations"]),
							Policy:                merge.PolicyOutcome(in["policy"].(string)),
							BuildTest:             merge.BuildTestStatus(in["build_test"].(string)),
							Waiver:                merge.WaiverState(in["waiver"].(string)),
						})
						assert.Equal(t, out.Verdict, wasm.Verdict, name)
						// Spot the rules.
						switch {
						case violation || duplicate || policy == "deny":
							assert.Equal(t, abi.Rejected, wasm.Verdict, name)
							assert.Equal(t, merge.BuildNotRun, merge.BuildTestStatus(in["build_test"].(string)), "the build never ran: %s", name)
						case policy == "unknown":
							assert.Equal(t, abi.Inconclusive, wasm.Verdict, name)
						case pipeline == "fail":
							assert.Equal(t, abi.Rejected, wasm.Verdict, name)
						case pipeline == "pass":
							assert.Equal(t, "verified", wasm.Basis, name)
						case pipeline == "broken":
							assert.Equal(t, abi.Inconclusive, wasm.Verdict, name)
						case waiver == "applies":
							assert.Equal(t, "waived", wasm.Basis, name)
						default:
							assert.Equal(t, abi.Inconclusive, wasm.Verdict, name)
						}
					}
				}
			}
		}
	}
	assert.Equal(t, 180, n)

	// Policy not granted: inconclusive even though the check would pass.
	subj, _ := json.Marshal(mergeSubject(false, false, "allow", "applies"))
	d, err := h.Check(ctx, "no-policy", subj, host.RunOptions{Worktree: worktree})
	require.NoError(t, err)
	assert.Equal(t, abi.Inconclusive, d.Verdict)
	assert.Equal(t, merge.ReasonPolicyUnavailable, d.Stages[0].Reason)
	assert.Equal(t, []string{"policy.merge"}, d.Stages[0].Evidence["capability_denied"])

	// A run without a worktree cannot run a configured check.
	subj, _ = json.Marshal(mergeSubject(false, false, "allow", "none"))
	d, err = h.Check(ctx, "pass", subj, host.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, abi.Inconclusive, d.Verdict)
	assert.Equal(t, merge.ReasonCheckUnavailable, d.Stages[0].Reason)
}

func codes(fs []abi.Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Code)
	}
	return out
}

// TestMergeCheckFailureAndWaiverAudited: a failed check reports its exit
// code and output tail; a waiver is written to the event log.
func TestMergeCheckFailureAndWaiverAudited(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "events.jsonl")
	h := hosttest.MergeHost(t, logPath)
	ctx := context.Background()
	subj, _ := json.Marshal(mergeSubject(false, false, "allow", "none"))
	d, err := h.Check(ctx, "fail", subj, host.RunOptions{Worktree: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, abi.Rejected, d.Verdict)
	f := d.Findings[len(d.Findings)-1]
	assert.Equal(t, merge.CodeBuildTestFailed, f.Code)
	assert.Equal(t, json.Number("3"), f.Details["exit_code"])
	assert.Equal(t, "boom\n", f.Details["output_tail"])

	subj, _ = json.Marshal(mergeSubject(false, false, "allow", "applies"))
	d, err = h.Check(ctx, "none", subj, host.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, abi.Accepted, d.Verdict)
	assert.Equal(t, "waived", d.Stages[0].Basis)
	require.NoError(t, h.Close(ctx))

	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"approved_by":"ops"`)
	rep, err := eventlog.Verify(logPath)
	require.NoError(t, err)
	assert.EqualValues(t, 4, rep.Records) // a stage and a decision per run
}

// atoi reads an integer the host decoded from a gate's evidence, where
// numbers are json.Number.
func atoi(t *testing.T, v any) int {
	t.Helper()
	n, ok := v.(json.Number)
	require.True(t, ok, "%v is a %T, not a json.Number", v, v)
	i, err := n.Int64()
	require.NoError(t, err)
	return int(i)
}
