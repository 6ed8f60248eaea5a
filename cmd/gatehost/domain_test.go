package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testwasm"
)

// writeDomainConfig writes a config with the retail domain and the
// retail-dry / retail-exec pipelines of gatehost.yaml.
func writeDomainConfig(t *testing.T, source string) string {
	t.Helper()
	pc, err := testwasm.Go("plugins/preconditions/wasm")
	require.NoError(t, err)
	dir := t.TempDir()
	stage := `
    stages:
      - plugin: preconditions
        timeout: 60s
        capabilities: [query]
        config: {domain: retail}`
	cfg := fmt.Sprintf(`
event_log:
  path: events.jsonl
cache_dir: %s
plugins:
  preconditions:
    path: %s
pipelines:
  retail-dry:
    subject: proposal%s
  retail-exec:
    subject: tool_call%s
domains:
  retail:
    catalog: %s
    source: %s
`, testwasm.CacheDir(), pc, stage, stage, filepath.Join(repoRoot, "testdata/domains/retail/domain.yaml"), source)
	path := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

func example(name string) string { return filepath.Join(repoRoot, "testdata/domains/examples", name) }

func TestCheckPreconditions(t *testing.T) {
	cfg := writeDomainConfig(t, fmt.Sprintf("{kind: documents, path: %s}", filepath.Join(repoRoot, "testdata/domains/retail/db.json")))
	cases := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"dry deny", []string{"--pipeline", "retail-dry", example("retail-cancel-processed.json")}, exitRejected, "[order_is_pending]"},
		{"execute admit", []string{"--pipeline", "retail-exec", example("retail-return-ok.json")}, exitAccepted, "ACCEPTED"},
		{"execute deny", []string{"--pipeline", "retail-exec", example("retail-return-wrong-refund.json")}, exitRejected, "[refund_to_original_or_gift_card]"},
		{"tool_call that is not one", []string{"--pipeline", "retail-exec", example("retail-cancel-processed.json")}, exitUsage, ""},
		{"bad --now", []string{"--pipeline", "retail-exec", "--now", "noon", example("retail-return-ok.json")}, exitUsage, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(append([]string{"check", "--config", cfg}, c.args...)...)
			assert.Equal(t, c.wantCode, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, c.wantOut)
		})
	}
}

func TestDomainSourceErrors(t *testing.T) {
	for _, src := range []string{
		"{kind: documents}",
		"{kind: ledger, path: x}",
		"{kind: documents, path: /nonexistent.json}",
		"{kind: sqlite, path: /nonexistent.db}",
	} {
		cfg := writeDomainConfig(t, src)
		code, _, errOut := runCLI("check", "--config", cfg, "--pipeline", "retail-exec", example("retail-return-ok.json"))
		assert.Equal(t, exitUsage, code, src)
		assert.Contains(t, errOut, "domains.retail.source", src)
	}
}

func TestDomainValidate(t *testing.T) {
	code, out, _ := runCLI("domain", "validate", filepath.Join(repoRoot, "testdata/domains/retail/domain.yaml"), filepath.Join(repoRoot, "testdata/domains/airline/domain.yaml"))
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "VALID")
	assert.Contains(t, out, "domain=airline")

	bad := filepath.Join(t.TempDir(), "domain.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(`domain: d
version: 1
capabilities:
  w:
    kind: action
    preconditions:
      - {id: pending_only, view: nope, bind: {}, deny_when: {field: status, equals: x}, message: m}
`), 0o644))
	code, out, _ = runCLI("domain", "validate", "--output", "json", bad)
	assert.Equal(t, 1, code)
	var res []struct {
		Valid  bool     `json:"valid"`
		Errors []string `json:"errors"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res, 1)
	assert.False(t, res[0].Valid)
	assert.Contains(t, res[0].Errors[0], "capability w: precondition pending_only: view: no view named")

	code, _, _ = runCLI("domain", "check")
	assert.Equal(t, exitUsage, code)
	code, _, _ = runCLI("domain", "validate")
	assert.Equal(t, exitUsage, code)
}
