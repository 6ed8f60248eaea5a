package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

var prefixDenyWasm string

func TestMain(m *testing.M) {
	testwasm.Main(m, func() (err error) {
		prefixDenyWasm, err = testwasm.Go("internal/testing/testguests/prefixdeny")
		return err
	})
}

// write writes a config file named name into a temp dir.
func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr string
	}{
		{in: "64MiB", want: 64 << 20}, {in: "512KiB", want: 512 << 10}, {in: "1GiB", want: 1 << 30},
		{in: "10MB", want: 10_000_000}, {in: "100", want: 100}, {in: "1 MiB", want: 1 << 20}, {in: "7B", want: 7},
		{in: "lots", wantErr: `"lots" is not a size`},
		{in: "-1MiB", wantErr: `"-1MiB" is not a size`},
		// The whole value is quoted, unit and all.
		{in: "1XB", wantErr: `"1XB" is not a size (use bytes or a unit such as 64MiB)`},
		{in: "99999999999999999999GiB", wantErr: `"99999999999999999999GiB" is not a size`},
		{in: "9000000000GiB", wantErr: `"9000000000GiB" is too large`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestStageConfigKeepsKeyCase: a stage's config: block reaches the gate as
// written, in every file format, while the loader still folds pipeline and
// plugin names. The prefixdeny gate's schema requires denyPrefixes and
// refuses any other key, so host.New fails on a folded config.
func TestStageConfigKeepsKeyCase(t *testing.T) {
	cache := testwasm.CacheDir()
	tests := []struct {
		name, file, body string
		pipeline         string
		want             string
	}{
		{name: "yaml", file: "g.yaml", pipeline: "plan", body: fmt.Sprintf(`
event_log: {path: events.jsonl}
cache_dir: %s
plugins: {PrefixDeny: {path: %s}}
pipelines:
  Plan:
    subject: proposal
    stages:
      - plugin: PrefixDeny
        config:
          denyPrefixes: [delete_, merge_]
`, cache, prefixDenyWasm), want: `{"denyPrefixes":["delete_","merge_"]}`},
		{name: "yaml nested keys and numbers", file: "g.yml", pipeline: "plan", body: fmt.Sprintf(`
event_log: {path: events.jsonl}
cache_dir: %s
plugins: {prefixdeny: {path: %s}}
pipelines:
  plan:
    subject: proposal
    stages:
      - plugin: prefixdeny
        config: {denyPrefixes: []}
      - plugin: prefixdeny
        name: second
        config: {denyPrefixes: [x]}
`, cache, prefixDenyWasm), want: `{"denyPrefixes":[]}`},
		{name: "toml", file: "g.toml", pipeline: "plan", body: fmt.Sprintf(`
cache_dir = %q
[event_log]
path = "events.jsonl"
[plugins.prefixdeny]
path = %q
[pipelines.Plan]
subject = "proposal"
[[pipelines.Plan.stages]]
plugin = "prefixdeny"
[pipelines.Plan.stages.config]
denyPrefixes = ["delete_"]
`, cache, prefixDenyWasm), want: `{"denyPrefixes":["delete_"]}`},
		{name: "json", file: "g.json", pipeline: "plan", body: fmt.Sprintf(`{
"event_log": {"path": "events.jsonl"}, "cache_dir": %q,
"plugins": {"prefixdeny": {"path": %q}},
"pipelines": {"PLAN": {"subject": "proposal", "stages": [
  {"plugin": "prefixdeny", "config": {"denyPrefixes": ["delete_"]}}]}}}`, cache, prefixDenyWasm),
			want: `{"denyPrefixes":["delete_"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Load(write(t, tt.file, tt.body))
			require.NoError(t, err)
			defer l.Close()
			p, ok := l.Host.Pipelines[tt.pipeline]
			require.True(t, ok, "pipeline names are folded: %v", l.Host.Pipelines)
			assert.JSONEq(t, tt.want, string(p.Stages[0].Config))
			assert.Equal(t, "prefixdeny", p.Stages[0].Plugin)
			l.Host.EventLogPath = ""
			h, err := host.New(context.Background(), l.Host)
			require.NoError(t, err, "the gate's config schema accepts the stage config")
			require.NoError(t, h.Close(context.Background()))
		})
	}
}

// TestStageConfigValues: what a stage config holds survives the trip to
// JSON unchanged — big integers, YAML's non-string keys as strings — and a
// stage without a config block has none.
func TestStageConfigValues(t *testing.T) {
	tests := []struct {
		name, file, body, want string
	}{
		{name: "json big integer", file: "g.json",
			body: `{"event_log":{"path":"e.jsonl"},"pipelines":{"p":{"stages":[{"plugin":"a","config":{"maxN":12345678901234567890}}]}}}`,
			want: `{"maxN":12345678901234567890}`},
		{name: "yaml integer keys", file: "g.yaml",
			body: "event_log: {path: e.jsonl}\npipelines:\n  p:\n    stages:\n      - plugin: a\n        config: {limits: {1: One, 2: Two}}\n",
			want: `{"limits":{"1":"One","2":"Two"}}`},
		{name: "no config", file: "g.yaml",
			body: "event_log: {path: e.jsonl}\npipelines:\n  p:\n    stages:\n      - plugin: a\n",
			want: ``},
		{name: "null config", file: "g.yaml",
			body: "event_log: {path: e.jsonl}\npipelines:\n  p:\n    stages:\n      - plugin: a\n        config: null\n",
			want: ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Load(write(t, tt.file, tt.body))
			require.NoError(t, err)
			defer l.Close()
			assert.Equal(t, tt.want, string(l.Host.Pipelines["p"].Stages[0].Config))
		})
	}
}

// TestPipelineNamesThatFoldTogether: two pipelines whose names differ only
// in case cannot be told apart once folded: refused, naming the key.
func TestPipelineNamesThatFoldTogether(t *testing.T) {
	p := write(t, "g.json", `{"event_log":{"path":"e.jsonl"},"pipelines":{"Plan":{"stages":[]},"plan":{"stages":[]}}}`)
	_, err := Load(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "config "+p+": pipelines: ")
}

// TestValueErrors: a bad value is quoted whole and named by its dotted
// key, after the file — or after the environment variable it came from.
func TestValueErrors(t *testing.T) {
	const base = "event_log: {path: e.jsonl}\n"
	const sizeReason = " is not a size (use bytes or a unit such as 64MiB)"
	tests := []struct {
		name string
		body string
		env  map[string]string
		// want is the message, with F for the file.
		want string
	}{
		{name: "size with a bad unit", body: base + "max_subject_bytes: 1XB\n",
			want: `config F: max_subject_bytes: "1XB"` + sizeReason},
		{name: "nested size", body: base + "compile_limits: {module_bytes: 2ZiB}\n",
			want: `config F: compile_limits.module_bytes: "2ZiB"` + sizeReason},
		{name: "stage size", body: base + "pipelines:\n  Plan:\n    stages:\n      - plugin: a\n        memory_limit: lots\n",
			want: `config F: pipelines.plan.stages[0].memory_limit: "lots"` + sizeReason},
		{name: "stage duration", body: base + "pipelines:\n  plan:\n    stages:\n      - plugin: a\n        timeout: soon\n",
			want: `config F: pipelines.plan.stages[0].timeout: "soon" is not a duration (such as 30s, 2m or 1h30m)`},
		{name: "top-level duration", body: base + "queue_timeout: 5 sec\n",
			want: `config F: queue_timeout: "5 sec" is not a duration (such as 30s, 2m or 1h30m)`},
		{name: "unknown stage key", body: base + "pipelines:\n  plan:\n    stages:\n      - plugin: a\n        retries: 3\n",
			want: `config F: unknown key "pipelines.plan.stages[0].retries"`},
		{name: "top-level key typo", body: base + "pipelnes:\n  plan:\n    subject: tool_call\n",
			want: `config F: unknown key "pipelnes"; did you mean "pipelines"?`},
		{name: "stage key typo", body: base + "pipelines:\n  plan:\n    stages:\n      - plugin: a\n        timout: 3s\n",
			want: `config F: unknown key "pipelines.plan.stages[0].timout"; did you mean "pipelines.plan.stages[0].timeout"?`},
		{name: "size from the environment", body: base,
			env:  map[string]string{"GATEHOST_MAX_RESPONSE_BYTES": "abc"},
			want: `GATEHOST_MAX_RESPONSE_BYTES="abc": "abc"` + sizeReason},
		{name: "integer from the environment", body: base,
			env:  map[string]string{"GATEHOST_POOL_SIZE": "many"},
			want: `GATEHOST_POOL_SIZE="many": cannot parse value as 'int': strconv.ParseInt: invalid syntax`},
		{name: "environment set, file wrong", body: base + "max_subject_bytes: 1XB\n",
			env:  map[string]string{"GATEHOST_MAX_RESPONSE_BYTES": "1MiB"},
			want: `config F: max_subject_bytes: "1XB"` + sizeReason},
		{name: "file value the environment overrides", body: base + "max_response_bytes: 1XB\n",
			env:  map[string]string{"GATEHOST_MAX_RESPONSE_BYTES": "2XB"},
			want: `GATEHOST_MAX_RESPONSE_BYTES="2XB": "2XB"` + sizeReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			p := write(t, "gatehost.yaml", tt.body)
			_, err := Load(p)
			require.Error(t, err)
			assert.Equal(t, strings.ReplaceAll(tt.want, "config F:", "config "+p+":"), err.Error())
		})
	}
}

// TestEnvOverridesNotStageConfig: a GATEHOST_* variable shaped like a
// stage config key is not read.
func TestEnvOverridesNotStageConfig(t *testing.T) {
	t.Setenv("GATEHOST_PIPELINES_P_STAGES_0_CONFIG_DENYPREFIXES", "x")
	t.Setenv("GATEHOST_POOL_SIZE", "3")
	l, err := Load(write(t, "g.yaml", "event_log: {path: e.jsonl}\npipelines:\n  p:\n    stages:\n      - plugin: a\n        config: {denyPrefixes: [y]}\n"))
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, 3, l.Host.PoolSize)
	assert.JSONEq(t, `{"denyPrefixes":["y"]}`, string(l.Host.Pipelines["p"].Stages[0].Config))
}

func TestUnsupportedFormat(t *testing.T) {
	for _, ext := range []string{"ini", "env", "conf"} {
		p := write(t, "gatehost."+ext, "pool_size=1\n")
		_, err := Load(p)
		assert.EqualError(t, err, fmt.Sprintf("config %s: unsupported config type %q (name it .yaml, .yml, .toml or .json)", p, ext))
	}
}

// TestHostErrorWraps: HostError names the file and the field, on one line,
// and keeps the host's error for errors.As.
func TestHostErrorWraps(t *testing.T) {
	l := &Loaded{File: "g.yaml"}
	ce := &host.ConfigError{Field: "pipelines.p", Reason: "no stages"}
	err := l.HostError(fmt.Errorf("wrapped: %w", ce))
	assert.EqualError(t, err, "config g.yaml: pipelines.p: no stages")
	var got *host.ConfigError
	assert.True(t, errors.As(err, &got))
	err = l.HostError(errors.New("line one\nline two"))
	assert.EqualError(t, err, "config g.yaml: line one; line two")
}

func TestLoadedCloseNil(t *testing.T) {
	var l *Loaded
	assert.NoError(t, l.Close())
}

// TestPoolKeys: pool_size, pool_memory_budget (a size, also from
// GATEHOST_POOL_MEMORY_BUDGET) and warm_pools reach host.Config; a bad
// budget names its key.
func TestPoolKeys(t *testing.T) {
	const base = "event_log: {path: e.jsonl}\n"
	tests := []struct {
		name       string
		body       string
		env        map[string]string
		wantSize   int
		wantBudget uint64
		wantWarm   bool
		wantErr    string
	}{
		{name: "absent", body: base},
		{name: "all set", body: base + "pool_size: 4\npool_memory_budget: 512MiB\nwarm_pools: true\n",
			wantSize: 4, wantBudget: 512 << 20, wantWarm: true},
		{name: "budget in bytes", body: base + "pool_memory_budget: 1048576\n", wantBudget: 1 << 20},
		{name: "budget from the environment", body: base + "pool_memory_budget: 1GiB\n",
			env: map[string]string{"GATEHOST_POOL_MEMORY_BUDGET": "256MiB"}, wantBudget: 256 << 20},
		{name: "budget not a size", body: base + "pool_memory_budget: plenty\n",
			wantErr: `pool_memory_budget: "plenty" is not a size`},
		{name: "budget negative", body: base + "pool_memory_budget: -1\n",
			wantErr: `pool_memory_budget: size -1 is negative`},
		{name: "warm not a bool", body: base + "warm_pools: sometimes\n", wantErr: "warm_pools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			l, err := Load(write(t, "gatehost.yaml", tt.body))
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			defer l.Close()
			assert.Equal(t, tt.wantSize, l.Host.PoolSize)
			assert.Equal(t, tt.wantBudget, l.Host.PoolMemoryBudget)
			assert.Equal(t, tt.wantWarm, l.Host.WarmPools)
		})
	}
}
