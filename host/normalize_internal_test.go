package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// hostState prints every part of the host's config and stages that came
// from the caller's maps and slices.
func hostState(h *Host) string {
	s := fmt.Sprintf("%+v|%+v|%+v|%+v", h.cfg.Plugins, h.cfg.Pipelines, h.cfg.Checks, h.cfg.Domains)
	for name, p := range h.pipelines {
		for _, st := range p.stages {
			s += fmt.Sprintf("|%s:%+v:%s", name, st.cfg, st.config)
		}
	}
	return s
}

// TestNewCopiesCallerConfig: New keeps no map or slice of the caller's
// Config, so that changing them afterwards, in any way, changes nothing in
// the host; and New writes nothing back into them (defaults included).
func TestNewCopiesCallerConfig(t *testing.T) {
	shared, err := testwasm.WAT("testdata/load/uses-caps.wat")
	require.NoError(t, err)
	wasm := bytes.Clone(shared) // testwasm's bytes are shared by every test
	cfg := Config{
		CacheDir: testwasm.CacheDir(),
		Plugins:  map[string]PluginConfig{"uc": {Module: wasm}},
		Pipelines: map[string]PipelineConfig{"p": {Subject: abi.SubjectProposal, Stages: []StageConfig{
			{Plugin: "uc", Capabilities: []string{"catalog", "session"}, Config: json.RawMessage(`{"max_actions":3}`)},
		}}},
		Checks:  map[string]CheckCommand{"test": {Argv: []string{"make", "test"}, Env: []string{"A=1"}}},
		Domains: map[string]Domain{},
	}
	h, err := New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	before := hostState(h)

	sc := &cfg.Pipelines["p"].Stages[0]
	assert.Empty(t, sc.Name, "New wrote a default back into the caller's stage")
	assert.Zero(t, sc.Timeout, "New wrote a default back into the caller's stage")

	mutations := []func(){
		func() { sc.Capabilities[0] = "query" },
		func() { sc.Config[2] = 'X' },
		func() { sc.Plugin, sc.Mode, sc.Timeout = "other", Advisory, time.Hour },
		func() { cfg.Pipelines["p"] = PipelineConfig{Subject: abi.SubjectMerge} },
		func() { cfg.Pipelines["q"] = PipelineConfig{Subject: abi.SubjectProposal} },
		func() { wasm[0] = 0xff },
		func() { cfg.Plugins["uc"] = PluginConfig{Path: "/elsewhere.wasm"} },
		func() { delete(cfg.Plugins, "uc") },
		func() { cfg.Checks["test"].Argv[0] = "rm"; cfg.Checks["test"].Env[0] = "B=2" },
		func() { cfg.Checks["more"] = CheckCommand{Argv: []string{"sh"}} },
		func() { cfg.Domains["d"] = Domain{} },
	}
	for i, m := range mutations {
		m()
		require.Equal(t, before, hostState(h), "mutation %d of the caller's config reached the host", i)
	}
	d, err := h.Check(context.Background(), "p", []byte(`{"actions":[]}`), RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, abi.Accepted, d.Verdict)
}
