package host_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/hostkit"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// usesCaps loads testdata/load/uses-caps.wat: a gate that declares catalog
// and session and a config schema of max_actions and limits.depth.
func usesCaps(t *testing.T) host.PluginConfig {
	t.Helper()
	wasm, err := testwasm.WAT("testdata/load/uses-caps.wat")
	require.NoError(t, err)
	return host.PluginConfig{Module: wasm}
}

// TestStageMustGrantDeclaredCapabilities: a stage that withholds a
// capability its gate declares is refused at load, naming the pipeline, the
// stage's index and name, and the capability; with every declared
// capability granted it loads; under hostkit.WithPartialGrants (the
// conformance kit, tests of denied calls) it loads too.
func TestStageMustGrantDeclaredCapabilities(t *testing.T) {
	tests := []struct {
		name    string
		caps    []string
		partial bool
		want    string // "" loads
	}{
		{name: "none granted", caps: nil, want: `gate uses-caps uses capability "catalog" but the stage does not grant it (capabilities: [])`},
		{name: "one withheld", caps: []string{"catalog"}, want: `gate uses-caps uses capability "session" but the stage does not grant it (capabilities: [catalog])`},
		{name: "other withheld", caps: []string{"session"}, want: `uses capability "catalog"`},
		{name: "all granted", caps: []string{"session", "catalog"}},
		{name: "partial grants allowed", caps: []string{"catalog"}, partial: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.partial {
				ctx = hostkit.WithPartialGrants(ctx)
			}
			h, err := host.New(ctx, host.Config{
				CacheDir: testwasm.CacheDir(),
				Plugins:  map[string]host.PluginConfig{"uc": usesCaps(t)},
				Pipelines: map[string]host.PipelineConfig{"plan": {Subject: abi.SubjectProposal, Stages: []host.StageConfig{
					{Name: "first", Plugin: "uc", Capabilities: []string{"catalog", "session"}},
					{Name: "second", Plugin: "uc", Capabilities: tt.caps},
				}}},
			})
			if tt.want == "" {
				require.NoError(t, err)
				require.NoError(t, h.Close(ctx))
				return
			}
			require.Error(t, err)
			var ce *host.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "pipelines.plan.stages[1].capabilities", ce.Field)
			assert.Contains(t, ce.Reason, "stage second: ")
			assert.Contains(t, ce.Reason, tt.want)
		})
	}
}

// TestDeclaredCapabilitiesOnlyForLoadedPipelines: with OnlyPipeline, a
// pipeline that is not loaded is not described, so its grants cannot be
// compared with a descriptor; the loaded one still is.
func TestDeclaredCapabilitiesOnlyForLoadedPipelines(t *testing.T) {
	cfg := host.Config{
		CacheDir: testwasm.CacheDir(),
		Plugins:  map[string]host.PluginConfig{"uc": usesCaps(t)},
		Pipelines: map[string]host.PipelineConfig{
			"full":    {Subject: abi.SubjectProposal, Stages: []host.StageConfig{{Plugin: "uc", Capabilities: []string{"catalog", "session"}}}},
			"partial": {Subject: abi.SubjectProposal, Stages: []host.StageConfig{{Plugin: "uc"}}},
		},
	}
	cfg.OnlyPipeline = "full"
	h, err := host.New(context.Background(), cfg)
	require.NoError(t, err)
	require.NoError(t, h.Close(context.Background()))
	cfg.OnlyPipeline = "partial"
	_, err = host.New(context.Background(), cfg)
	var ce *host.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "pipelines.partial.stages[0].capabilities", ce.Field)
}

// TestStageConfigErrorNamesTheKey: a stage config the gate's schema refuses
// is a *ConfigError wrapping ErrStageConfig whose field is the offending
// key's path; an unknown key lists the keys the schema accepts at that
// level. The message names neither the schema's resource name nor the stage
// twice.
func TestStageConfigErrorNamesTheKey(t *testing.T) {
	tests := []struct {
		name, config string
		field        string
		reason       string
	}{
		{"unknown key", `{"max_action":5}`, "pipelines.plan.stages[0].config", `unknown key "max_action" (accepts: limits, max_actions)`},
		{"two unknown keys", `{"b":1,"a":2,"max_actions":1}`, "pipelines.plan.stages[0].config", `unknown keys "a", "b" (accepts: limits, max_actions)`},
		{"nested unknown key", `{"limits":{"dept":1}}`, "pipelines.plan.stages[0].config.limits", `unknown key "dept" (accepts: depth)`},
		{"escaped key", `{"a/b~c":1}`, "pipelines.plan.stages[0].config", `unknown key "a/b~c"`},
		{"wrong type", `{"max_actions":"many"}`, "pipelines.plan.stages[0].config.max_actions", "expected integer"},
		{"nested wrong type", `{"limits":{"depth":[1]}}`, "pipelines.plan.stages[0].config.limits.depth", "expected integer"},
		{"not an object", `[1]`, "pipelines.plan.stages[0].config", "expected object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := host.New(context.Background(), host.Config{
				CacheDir: testwasm.CacheDir(),
				Plugins:  map[string]host.PluginConfig{"uc": usesCaps(t)},
				Pipelines: map[string]host.PipelineConfig{"plan": {Subject: abi.SubjectProposal, Stages: []host.StageConfig{
					{Plugin: "uc", Capabilities: []string{"catalog", "session"}, Config: json.RawMessage(tt.config)},
				}}},
			})
			require.Error(t, err)
			assert.ErrorIs(t, err, host.ErrStageConfig)
			var ce *host.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.field, ce.Field)
			assert.Contains(t, ce.Reason, tt.reason)
			assert.NotContains(t, err.Error(), "config.schema.json")
			assert.NotContains(t, err.Error(), "load_error")
		})
	}
}

// TestStageConfigForGateWithoutSchema: a config for a gate that takes none
// is refused on the config's key path.
func TestStageConfigForGateWithoutSchema(t *testing.T) {
	wasm, err := testwasm.WAT("testdata/edge/accept-all.wat")
	require.NoError(t, err)
	_, err = host.New(context.Background(), host.Config{
		CacheDir: testwasm.CacheDir(),
		Plugins:  map[string]host.PluginConfig{"aa": {Module: wasm}},
		Pipelines: map[string]host.PipelineConfig{"plan": {Subject: abi.SubjectProposal, Stages: []host.StageConfig{
			{Plugin: "aa", Config: json.RawMessage(`{"x":1}`)},
		}}},
	})
	assert.ErrorIs(t, err, host.ErrStageConfig)
	var ce *host.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "pipelines.plan.stages[0].config", ce.Field)
	assert.Contains(t, ce.Reason, "takes no config")
}
