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

// writeToolRefsConfig writes a config over the GitHub catalog (server
// github) whose exec pipeline confirms the tools listed in confirm (a YAML
// list), and whose mcp: section names the pipeline "gated", which confirms
// gated (the gateway's catalog is only known after its first listing).
func writeToolRefsConfig(t *testing.T, confirm, gated string) string {
	t.Helper()
	execWasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	cfg := fmt.Sprintf(`
catalog:
  sources:
    - {format: mcp, path: %s, server: github}
event_log: {path: events.jsonl}
sessions: {path: sessions.json}
cache_dir: %s
plugins:
  exec: {path: %s}
pipelines:
  exec:
    subject: tool_call
    stages:
      - plugin: exec
        timeout: 60s
        capabilities: [catalog, session]
        config:
          confirm_effects: []
          confirm_tools: %s
  gated:
    subject: tool_call
    stages:
      - plugin: exec
        timeout: 60s
        capabilities: [catalog, session]
        config: {confirm_tools: %s}
mcp:
  pipeline: gated
`, filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server"), testwasm.CacheDir(), execWasm, confirm, gated)
	path := filepath.Join(t.TempDir(), "gatehost.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

// TestToolReferenceTypoRefusesToStart: a confirm_tools entry that matches
// no tool of the file catalog refuses the config with exit 2, naming the
// key and the closest real id, before anything is decided; the pipeline
// the MCP gateway serves is left to the gateway.
func TestToolReferenceTypoRefusesToStart(t *testing.T) {
	gated := `["mcp.memory:delete_entities"]` // not in the file catalog: the gateway's
	cfg := writeToolRefsConfig(t, `["mcp.github:merge_pull_request", "mcp.github:merge_pull_requst"]`, gated)
	code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", "exec", "--session", "dev", call("openai-tool-call.json"))
	assert.Equal(t, exitUsage, code, out+errOut)
	assert.Empty(t, out)
	assert.Contains(t, errOut, `pipelines.exec.stages[0].config.confirm_tools[1]: "mcp.github:merge_pull_requst" matches no tool; did you mean "mcp.github:merge_pull_request"?`)
	assert.NotContains(t, errOut, "confirm_tools[0]")
	assert.NotContains(t, errOut, "delete_entities")
	events, _ := os.ReadFile(filepath.Join(filepath.Dir(cfg), "events.jsonl"))
	assert.Empty(t, events, "nothing was decided")

	// A namespace that is not the upstream's, and a wire name where an
	// id is wanted: both named, each with its suggestion.
	cfg = writeToolRefsConfig(t, `["mcp.gh:merge_pull_request", "merge_pull_request"]`, gated)
	code, _, errOut = runCLI("check", "--config", cfg, "--pipeline", "exec", call("openai-tool-call.json"))
	assert.Equal(t, exitUsage, code, errOut)
	assert.Contains(t, errOut, `2 tool references match no tool`)
	assert.Contains(t, errOut, `confirm_tools[0]: "mcp.gh:merge_pull_request" matches no tool; did you mean "mcp.github:merge_pull_request"?`)
	assert.Contains(t, errOut, `confirm_tools[1]: "merge_pull_request" matches no tool (the field takes canonical ids, namespace:name); did you mean "mcp.github:merge_pull_request"?`)

	// Every name matches: the check runs.
	cfg = writeToolRefsConfig(t, `["mcp.github:create_pull_request"]`, gated)
	code, out, errOut = runCLI("check", "--config", cfg, "--pipeline", "exec", "--session", "dev", call("openai-tool-call.json"))
	assert.Equal(t, exitRejected, code, out+errOut)
	assert.Contains(t, out, "not_activated")
}
