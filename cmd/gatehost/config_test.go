package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// TestCheckStageConfigKeyCase: a gate whose config schema has a camelCase
// key (denyPrefixes) is configured through gatehost.yaml and applies it.
func TestCheckStageConfigKeyCase(t *testing.T) {
	gate, err := testwasm.Go("internal/testing/testguests/prefixdeny")
	require.NoError(t, err)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
event_log: {path: events.jsonl}
cache_dir: %s
plugins: {prefixdeny: {path: %s}}
pipelines:
  Plan:
    subject: proposal
    stages:
      - plugin: prefixdeny
        timeout: 60s
        config:
          denyPrefixes: [delete_, force_]
`, testwasm.CacheDir(), gate)), 0o644))
	tests := []struct {
		tool string
		want int
	}{
		{"delete_repository", exitRejected},
		{"force_push", exitRejected},
		{"get_me", exitAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			subj := filepath.Join(t.TempDir(), "p.json")
			require.NoError(t, os.WriteFile(subj, []byte(`{"actions":[{"tool":"`+tt.tool+`"}]}`), 0o644))
			code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", "plan", subj)
			assert.Equal(t, tt.want, code, "stdout: %s\nstderr: %s", out, errOut)
		})
	}
}

// TestConfigValueErrorsCLI: a bad size is quoted whole, and blamed on the
// environment variable it came from rather than the file.
func TestConfigValueErrorsCLI(t *testing.T) {
	const reason = ` is not a size (use bytes or a unit such as 64MiB)`
	tests := []struct {
		name  string
		extra string
		env   map[string]string
		want  func(cfg string) string
	}{
		{name: "file", extra: "max_subject_bytes: 1XB\n",
			want: func(cfg string) string {
				return "gatehost: config " + cfg + `: max_subject_bytes: "1XB"` + reason + "\n"
			}},
		{name: "env", env: map[string]string{"GATEHOST_MAX_RESPONSE_BYTES": "abc"},
			want: func(string) string { return `gatehost: GATEHOST_MAX_RESPONSE_BYTES="abc": "abc"` + reason + "\n" }},
		{name: "stage key path", extra: "  extra:\n    subject: proposal\n    stages:\n      - plugin: trap\n        timeout: soon\n",
			want: func(cfg string) string {
				return "gatehost: config " + cfg + `: pipelines.extra.stages[0].timeout: "soon" is not a duration (such as 30s, 2m or 1h30m)` + "\n"
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg := writeConfig(t, tt.extra)
			code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", "admission", proposal("read-then-write.json"))
			assert.Equal(t, exitUsage, code, out)
			assert.Equal(t, tt.want(cfg), errOut)
		})
	}
}
