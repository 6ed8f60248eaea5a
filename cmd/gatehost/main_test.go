package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

var (
	repoRoot string
	svWasm   string
	trapWasm []byte
)

// cliChildEnv makes the test binary run as the CLI itself, for tests that
// need a process of their own (signals).
const cliChildEnv = "GATEHOST_TEST_RUN_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(cliChildEnv) == "1" {
		main() // exits
	}
	testwasm.Main(stopPostgres{m}, func() (err error) {
		if repoRoot, err = testwasm.Root(); err != nil {
			return err
		}
		if svWasm, err = testwasm.Go("plugins/static-verify/wasm"); err != nil {
			return err
		}
		trapWasm, err = testwasm.WAT("testdata/hostile/trap.wat")
		return err
	})
}

// stopPostgres stops the shared PostgreSQL test cluster after the tests.
type stopPostgres struct{ m *testing.M }

func (s stopPostgres) Run() int {
	code := s.m.Run()
	pgtest.StopShared()
	return code
}

// writeConfig writes a config file into a temp dir whose plugin and catalog
// paths are absolute, so relative-path resolution is tested separately.
func writeConfig(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	trap := filepath.Join(dir, "trap.wasm")
	require.NoError(t, os.WriteFile(trap, trapWasm, 0o644))
	cfg := fmt.Sprintf(`
catalog:
  sources:
    - format: mcp
      path: %s
      server: github
event_log:
  path: events.jsonl
cache_dir: %s
plugins:
  static-verify:
    path: %s
  trap:
    path: trap.wasm
pipelines:
  admission:
    subject: proposal
    stages:
      - plugin: static-verify
        timeout: 60s
        capabilities: [catalog, schema]
        config: { max_actions: 100 }
  broken:
    subject: proposal
    stages:
      - plugin: trap
        timeout: 60s
%s`, filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server"), testwasm.CacheDir(), svWasm, extra)
	path := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func proposal(name string) string { return filepath.Join(repoRoot, "testdata/proposals", name) }

func TestCheckExitCodes(t *testing.T) {
	cfg := writeConfig(t, "")
	tests := []struct {
		name     string
		args     []string
		want     int
		contains string
	}{
		{"accepted", []string{"--pipeline", "admission", proposal("read-then-write.json")}, exitAccepted, "ACCEPTED"},
		{"rejected", []string{"--pipeline", "admission", proposal("bad-args-and-unknown-tool.json")}, exitRejected, "unknown_tool"},
		{"advisory", []string{"--pipeline", "admission", "--format", "openai", proposal("openai-repeated-calls.json")}, exitAccepted, "repeated_call"},
		{"trap is inconclusive", []string{"--pipeline", "broken", proposal("read-then-write.json")}, exitInconclusive, "plugin_trap"},
		{"no pipeline chosen", []string{proposal("read-then-write.json")}, exitUsage, ""},
		{"unknown pipeline", []string{"--pipeline", "nope", proposal("read-then-write.json")}, exitUsage, ""},
		{"missing subject", []string{"--pipeline", "admission", "/nonexistent.json"}, exitUsage, ""},
		{"bad format", []string{"--pipeline", "admission", "--format", "anthropic", proposal("read-then-write.json")}, exitUsage, ""},
		{"bad output", []string{"--pipeline", "admission", "--output", "xml", proposal("read-then-write.json")}, exitUsage, ""},
		{"no args", []string{}, exitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(append([]string{"check", "--config", cfg}, tt.args...)...)
			assert.Equal(t, tt.want, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, tt.contains)
		})
	}
	code, out, errOut := runCLI("log", "verify", "--config", cfg)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "chain holds")
}

func TestCheckJSONOutput(t *testing.T) {
	cfg := writeConfig(t, "")
	code, out, _ := runCLI("check", "--config", cfg, "--pipeline", "admission", "--output", "json", proposal("bad-args-and-unknown-tool.json"))
	require.Equal(t, exitRejected, code)
	var d struct {
		Verdict           string  `json:"verdict"`
		RunID             string  `json:"run_id"`
		Pipeline          string  `json:"pipeline"`
		CatalogGeneration *uint64 `json:"catalog_generation"`
		Stages            []struct {
			Name, Plugin, Mode, Verdict string
			Findings                    []json.RawMessage
		} `json:"stages"`
		Findings []struct {
			Code, Severity, Tier, Message, Stage, Path string
			ActionIndex                                *int `json:"action_index"`
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	assert.Equal(t, "rejected", d.Verdict)
	assert.Len(t, d.RunID, 32)
	assert.NotNil(t, d.CatalogGeneration)
	require.Len(t, d.Stages, 1)
	assert.Equal(t, "enforce", d.Stages[0].Mode)
	codes := map[string]int{}
	for _, f := range d.Findings {
		codes[f.Code]++
		assert.Equal(t, "static-verify", f.Stage)
		assert.Equal(t, "blocking", f.Severity)
		require.NotNil(t, f.ActionIndex)
	}
	assert.Equal(t, map[string]int{"schema_violation": 2, "unknown_tool": 1}, codes)
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name, extra, want string
	}{
		{"unknown top-level key", "colour: blue\n", "colour"},
		{"unknown stage key", "  extra:\n    subject: proposal\n    stages:\n      - plugin: trap\n        retries: 3\n", "retries"},
		{"bad memory limit", "  extra:\n    subject: proposal\n    stages:\n      - plugin: trap\n        memory_limit: lots\n", "lots"},
		{"bad mode", "  extra:\n    subject: proposal\n    stages:\n      - plugin: trap\n        mode: maybe\n", "mode"},
		{"timeout without unit", "  extra:\n    subject: proposal\n    stages:\n      - plugin: trap\n        timeout: 5\n", "timeout"},
		{"no event log", "event_log:\n  path: \"\"\n", "event_log"},
		{"compile limit refuses a gate", "compile_limits:\n  nesting: 100\n", "compile_limits.nesting: 101 exceeds the limit of 100"},
		{"negative compile limit", "compile_limits:\n  locals: -1\n", "compile_limits.locals: must be positive"},
		{"configured block limit", "compile_limits:\n  blocks: 500\n", "compile_limits.blocks: 501 exceeds the limit of 500"},
		{"unknown compile limit", "compile_limits:\n  depth: 5\n", "depth"},
		{"compile timeout without unit", "compile_timeout: 5\n", "compile_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeConfig(t, tt.extra)
			code, _, errOut := runCLI("check", "--config", cfg, "--pipeline", "admission", proposal("read-then-write.json"))
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errOut, tt.want)
		})
	}
}

func TestPluginNamesCaseInsensitive(t *testing.T) {
	cfg := writeConfig(t, "  Upper:\n    subject: proposal\n    stages:\n      - plugin: TRAP\n        timeout: 60s\n")
	// The config spells the pipeline Upper; --pipeline finds it however
	// it is spelled, as the config loader folds keys to lower case.
	for _, name := range []string{"upper", "Upper", "UPPER"} {
		code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", name, proposal("read-then-write.json"))
		assert.Equal(t, exitInconclusive, code, errOut)
		assert.Contains(t, out, "plugin_trap")
	}
	code, _, errOut := runCLI("bench", "--config", cfg, "--pipeline", "UPPER", "-n", "1", proposal("read-then-write.json"))
	assert.Equal(t, 0, code, errOut)
}

func TestEnvOverride(t *testing.T) {
	cfg := writeConfig(t, "")
	other := filepath.Join(t.TempDir(), "other.jsonl")
	t.Setenv("GATEHOST_EVENT_LOG_PATH", other)
	code, _, errOut := runCLI("check", "--config", cfg, "--pipeline", "admission", proposal("read-then-write.json"))
	require.Equal(t, exitAccepted, code, errOut)
	_, err := os.Stat(other)
	assert.NoError(t, err, "the event log should be at the overridden path")
}

func TestLogVerifyDetectsTampering(t *testing.T) {
	cfg := writeConfig(t, "")
	code, _, _ := runCLI("check", "--config", cfg, "--pipeline", "admission", proposal("read-then-write.json"))
	require.Equal(t, exitAccepted, code)
	logPath := filepath.Join(filepath.Dir(cfg), "events.jsonl")
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	tampered := strings.Replace(string(b), `"verdict":"accepted"`, `"verdict":"rejected"`, 1)
	require.NotEqual(t, string(b), tampered)
	require.NoError(t, os.WriteFile(logPath, []byte(tampered), 0o644))
	code, out, _ := runCLI("log", "verify", "--config", cfg)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "FAILED")
}
