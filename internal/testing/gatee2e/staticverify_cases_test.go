package gatee2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	staticverify "github.com/gatehost/gatehost/plugins/static-verify"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

type svCase struct {
	Subject        json.RawMessage `json:"subject"`
	Config         json.RawMessage `json:"config,omitempty"`
	Granted        *[]string       `json:"granted,omitempty"`
	InvalidSubject bool            `json:"invalid_subject,omitempty"`
	WantVerdict    abi.Verdict     `json:"want_verdict"`
}

// TestStaticVerifyNativeEqualsWasm runs every static-verify case natively
// (sdk/gatetest) and through the host (the wasm module, sandboxed), and
// requires the same answer: verdict, reason, basis, every finding and the
// evidence.
func TestStaticVerifyNativeEqualsWasm(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "testdata/static-verify/cases/*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	store := hosttest.GitHubCatalog(t)
	var tools []abi.Tool
	for _, tl := range store.Snapshot().List() {
		tools = append(tools, tl.ABI())
	}

	cases := map[string]svCase{}
	pipelines := map[string]host.PipelineConfig{}
	pipelineOf := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var c svCase
		require.NoError(t, json.Unmarshal(b, &c), f)
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		cases[name] = c
		caps := []string{"catalog", "schema"}
		if c.Granted != nil {
			caps = *c.Granted
		}
		sum := sha256.Sum256([]byte(fmt.Sprint(string(c.Config), caps)))
		key := fmt.Sprintf("p%x", sum[:8])
		pipelineOf[name] = key
		pipelines[key] = host.PipelineConfig{Subject: "proposal", Stages: []host.StageConfig{{
			Name: "static-verify", Plugin: "sv", Capabilities: caps, Config: c.Config,
		}}}
	}
	// Cases with "granted" withhold capabilities, to check denied calls.
	h := hosttest.NewPartial(t, host.Config{
		Plugins:   map[string]host.PluginConfig{"sv": {Path: staticVerifyWasm}},
		Catalog:   store,
		Pipelines: pipelines,
	})
	codes := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			d, err := h.Check(context.Background(), pipelineOf[name], c.Subject, host.RunOptions{})
			if c.InvalidSubject {
				assert.ErrorIs(t, err, host.ErrBadSubject)
				return
			}
			require.NoError(t, err)
			wasm := d.Stages[0]

			gh := gatetest.NewHost(tools...)
			gh.Generation = d.CatalogGeneration
			if c.Granted != nil {
				gh.Granted = *c.Granted
			}
			native, err := gatetest.Evaluate(context.Background(), staticverify.Gate,
				abi.Request{SubjectKind: abi.SubjectProposal, Subject: c.Subject, Config: c.Config,
					Context: abi.Context{CatalogGeneration: d.CatalogGeneration}}, gh)
			require.NoError(t, err)

			assert.Equal(t, c.WantVerdict, wasm.Verdict)
			assert.Equal(t, native.Verdict, wasm.Verdict)
			assert.Equal(t, native.Reason, wasm.Reason)
			assert.Equal(t, native.Basis, wasm.Basis)
			if native.Findings == nil {
				native.Findings = []abi.Finding{}
			}
			// Compared as JSON: the host keeps the numbers of details as
			// json.Number, gatetest decodes them as float64.
			nativeF, _ := json.Marshal(native.Findings)
			wasmF, _ := json.Marshal(wasm.Findings)
			assert.JSONEq(t, string(nativeF), string(wasmF))
			nativeEv, _ := json.Marshal(native.Evidence)
			wasmEv, _ := json.Marshal(wasm.Evidence)
			if native.Verdict != abi.Inconclusive { // error text may differ by platform
				assert.JSONEq(t, string(nativeEv), string(wasmEv))
			}
			for _, f := range wasm.Findings {
				codes[f.Code] = true
			}
		})
	}
	for _, code := range []string{"unknown_tool", "missing_tool", "schema_violation", "too_many_actions",
		"unsatisfied_precondition", "unwritten_dependency", "write_conflict", "repeated_call"} {
		assert.True(t, codes[code], "no case produced %s through the host", code)
	}
}
