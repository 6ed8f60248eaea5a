package gatekit_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/sdk/gatekit"
)

// TestBrokenGateListsEveryProblem runs the kit on a gate that breaks nearly
// every rule (testdata/gatetest/broken.wat) and requires one run to report
// each problem, with its case.
func TestBrokenGateListsEveryProblem(t *testing.T) {
	t.Parallel()
	wasm, err := testwasm.WAT("testdata/gatetest/broken.wat")
	require.NoError(t, err)
	cases, err := gatekit.LoadCases(filepath.Join(root(t), "testdata/gatetest/broken-cases"))
	require.NoError(t, err)
	r, err := gatekit.Check(context.Background(), wasm, gatekit.Options{
		Cases: cases, Budget: gatekit.Budget{Time: 500 * time.Millisecond, OversizedTime: time.Second},
		Host: host.Config{CacheDir: testwasm.CacheDir()},
	})
	require.NoError(t, err)
	got := map[string]bool{}
	for _, f := range r.Failures {
		got[f.Check+" "+f.Case] = true
	}
	for _, want := range []string{
		"descriptor ",                        // declares an unknown capability
		"evidence kind/tool_call",            // accepted without evidence
		"trap malformed/not_json",            // traps on bad input
		"trap empty/whitespace",              //
		"malformed malformed/abi_version_2",  // a verdict other than inconclusive
		"budget oversized/unterminated",      // loops past the time budget
		"case case/accept_empty_plan",        // the author's case
		"determinism case/accept_empty_plan", // flips between answers
		"capabilities kind/proposal",         // calls an undeclared capability
	} {
		assert.True(t, got[want], "no failure %q among:\n%v", want, r.Err())
	}
	for _, c := range []string{gatekit.CheckDescriptor, gatekit.CheckEvidence, gatekit.CheckTrap, gatekit.CheckMalformed,
		gatekit.CheckBudget, gatekit.CheckCase, gatekit.CheckDeterminism, gatekit.CheckCapabilities} {
		assert.Equal(t, "fail", r.Checks[c], c)
	}
	assert.Equal(t, "pass", r.Checks[gatekit.CheckModule])
	assert.Error(t, r.Err())
}

// TestWATExample: the gate written in WAT against abi/SPEC.md alone passes
// the kit with its own cases.
func TestWATExample(t *testing.T) {
	t.Parallel()
	wasm, err := testwasm.WAT("examples/effect-guard-wat/gate.wat")
	require.NoError(t, err)
	dir := root(t)
	cases, err := gatekit.LoadCases(filepath.Join(dir, "examples/effect-guard-wat/cases"))
	require.NoError(t, err)
	tools, err := catalog.Load(filepath.Join(dir, "testdata/exec/catalog.json"), catalog.ImportOptions{Format: catalog.FormatNative})
	require.NoError(t, err)
	store, err := catalog.NewStore(tools...)
	require.NoError(t, err)
	r, err := gatekit.Check(context.Background(), wasm, gatekit.Options{
		Cases: cases, Budget: testBudget, OversizedBytes: host.MaxSubjectBytes,
		Host: host.Config{Catalog: store, CacheDir: testwasm.CacheDir()},
	})
	require.NoError(t, err)
	require.NoError(t, r.Err())
	assert.Len(t, r.Results, 4+11+len(cases))
}

// TestConfigNotHeldProbe: a gate that declares config_cache but evaluates
// a request whose config it was never sent fails the kit, naming the probe;
// the SDK's gates answer it config_not_held.
func TestConfigNotHeldProbe(t *testing.T) {
	t.Parallel()
	wasm, err := testwasm.WAT("testdata/gatetest/forgets-config.wat")
	require.NoError(t, err)
	r, err := gatekit.Check(context.Background(), wasm, gatekit.Options{Host: host.Config{CacheDir: testwasm.CacheDir()}})
	require.NoError(t, err)
	var failed []string
	for _, f := range r.Failures {
		failed = append(failed, f.Check+" "+f.Case)
	}
	assert.Contains(t, failed, "malformed malformed/config_not_held")
}
