package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// TestLoadRefusesStageMistakes: `check` exits 2 at load, before any run,
// when a stage withholds a capability its gate declares, or when its
// config has a key the gate's config schema does not accept; the message
// names the key path once, and the capability or the keys accepted.
func TestLoadRefusesStageMistakes(t *testing.T) {
	usesCaps, err := testwasm.WAT("testdata/load/uses-caps.wat")
	require.NoError(t, err)
	tests := []struct {
		name  string
		stage string
		want  []string
	}{
		{"capability withheld", "{plugin: uc, timeout: 60s, capabilities: [catalog]}",
			[]string{`pipelines.plan.stages[1].capabilities: stage uc: gate uses-caps uses capability "session" but the stage does not grant it (capabilities: [catalog])`}},
		{"no capability granted", "{plugin: uc, timeout: 60s}",
			[]string{`pipelines.plan.stages[1].capabilities: `, `uses capability "catalog"`}},
		{"static-verify without catalog", "{plugin: static-verify, timeout: 60s}",
			[]string{`pipelines.plan.stages[1].capabilities: stage static-verify: gate static-verify uses capability "catalog"`}},
		{"unknown config key", "{plugin: uc, timeout: 60s, capabilities: [catalog, session], config: {max_action: 100}}",
			[]string{`pipelines.plan.stages[1].config: unknown key "max_action" (accepts: limits, max_actions)`}},
		{"nested unknown config key", "{plugin: uc, timeout: 60s, capabilities: [catalog, session], config: {limits: {dept: 1}}}",
			[]string{`pipelines.plan.stages[1].config.limits: unknown key "dept" (accepts: depth)`}},
		{"static-verify config typo", "{plugin: static-verify, timeout: 60s, capabilities: [catalog, schema], config: {max_action: 100}}",
			[]string{`pipelines.plan.stages[1].config: unknown key "max_action" (accepts: `, "max_actions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeConfig(t, `  plan:
    subject: proposal
    stages:
      - {name: first, plugin: static-verify, timeout: 60s, capabilities: [catalog, schema]}
      - `+tt.stage+"\n")
			require.NoError(t, appendPlugin(cfg, "uc", usesCaps))
			code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", "plan", proposal("read-then-write.json"))
			assert.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Empty(t, out)
			for _, w := range tt.want {
				assert.Contains(t, errOut, w)
			}
			assert.NotContains(t, errOut, "config.schema.json")
			assert.NotContains(t, errOut, "load_error")
			assert.Equal(t, 1, strings.Count(errOut, "stages[1]"), "the stage is named once: %s", errOut)
		})
	}
}

// appendPlugin adds a plugin whose module is wasm to the plugins of the
// config file written by writeConfig.
func appendPlugin(cfg, name string, wasm []byte) error {
	dir := filepath.Dir(cfg)
	if err := os.WriteFile(filepath.Join(dir, name+".wasm"), wasm, 0o644); err != nil {
		return err
	}
	b, err := os.ReadFile(cfg)
	if err != nil {
		return err
	}
	s := strings.Replace(string(b), "plugins:\n", "plugins:\n  "+name+":\n    path: "+name+".wasm\n", 1)
	return os.WriteFile(cfg, []byte(s), 0o644)
}
