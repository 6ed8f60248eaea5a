package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testwasm"
	"github.com/gatehost/gatehost/mcpgateway"
)

// writeMCPConfig writes a config with the exec gate in a tool_call
// pipeline "gated", a proposal pipeline "admission", and the given mcp:
// section (YAML, indented under mcp:).
func writeMCPConfig(t *testing.T, mcpSection string) string {
	t.Helper()
	execWasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`
event_log: {path: events.jsonl}
sessions: {path: sessions.json}
cache_dir: %s
plugins:
  exec: {path: %s}
  static-verify: {path: %s}
pipelines:
  gated:
    subject: tool_call
    stages:
      - plugin: exec
        timeout: 60s
        capabilities: [catalog, session]
        config: {confirm_effects: [], confirm_tools: ["mcp.memory:delete_entities"]}
  admission:
    subject: proposal
    stages:
      - plugin: static-verify
        timeout: 60s
        capabilities: [catalog, schema]
mcp:
%s`, testwasm.CacheDir(), execWasm, svWasm, mcpSection)
	path := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

// TestMCPConfigErrors: a bad mcp: section exits 2 naming the key, before
// anything is served.
func TestMCPConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, section string
		args          []string
		want          string
	}{
		{"env without =", "  pipeline: gated\n  upstreams:\n    mem: {command: [x], env: [NOVALUE]}\n", nil, "mcp.upstreams.mem.env[0]: want KEY=VALUE"},
		{"no upstream", "  pipeline: gated\n", nil, "upstreams: at least one upstream is required"},
		{"no pipeline", "  upstreams:\n    mem: {command: [x]}\n", nil, "pipeline: required"},
		{"proposal pipeline", "  pipeline: admission\n  upstreams:\n    mem: {command: [x]}\n", nil, `pipeline "admission" checks proposal subjects`},
		{"unknown pipeline", "  upstreams:\n    mem: {command: [x]}\n", []string{"--pipeline", "nope"}, `no such pipeline`},
		{"trust", "  pipeline: gated\n  upstreams:\n    mem: {command: [x], trust: maybe}\n", nil, `upstreams[0].trust: "maybe"`},
		{"both", "  pipeline: gated\n  upstreams:\n    mem: {command: [x], url: http://x}\n", nil, "set command or url, not both"},
		{"unknown key", "  pipeline: gated\n  upstreams:\n    mem: {comand: [x]}\n", nil, "comand"},
		{"bad duration", "  pipeline: gated\n  call_timeout: soon\n  upstreams:\n    mem: {command: [x]}\n", nil, "call_timeout"},
		{"upstream name", "  pipeline: gated\n", []string{"--upstream-name", "Not.Valid", "--", "x"}, `upstreams[0].name: "Not.Valid"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeMCPConfig(t, tc.section)
			code, out, errOut := runCLI(append([]string{"mcp", "--config", cfg}, tc.args...)...)
			assert.Equal(t, exitUsage, code, errOut)
			assert.Contains(t, errOut, tc.want)
			assert.Empty(t, out)
		})
	}
}

// TestMCPStdio: gatehost mcp as an mcp.json server command, in front of
// @modelcontextprotocol/server-memory; the session it serves is visible to
// gatehost session show while it runs, and the event log verifies.
func TestMCPStdio(t *testing.T) {
	server := filepath.Join(repoRoot, "testdata/mcp/node_modules/.bin/mcp-server-memory")
	if _, err := os.Stat(server); err != nil {
		if testing.Short() {
			t.Skip("server-memory not installed (-short)")
		}
		t.Fatalf("%s is not installed: run make mcp-deps", server)
	}
	cfg := writeMCPConfig(t, "  pipeline: gated\n  upstreams: {}\n  sessions: {activate_on_list: [\"*\"]}\n")
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "mcp", "--config", cfg, "--upstream-name", "memory", "--", server)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", "MEMORY_FILE_PATH="+filepath.Join(t.TempDir(), "memory.jsonl"))
	cmd.Stderr = os.Stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	_, err = cs.ListTools(ctx, nil)
	require.NoError(t, err)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_entities", Arguments: map[string]any{
		"entities": []map[string]any{{"name": "bob", "entityType": "person", "observations": []string{}}}}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_entities", Arguments: map[string]any{"entityNames": []string{"bob"}}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	// The Decision is in _meta; delete_entities declares an output schema,
	// so it is not the structured content too.
	assert.Contains(t, fmt.Sprint(res.Meta[mcpgateway.MetaDecision]), "confirmation_required")
	assert.Nil(t, res.StructuredContent)

	code, out, errOut := runCLI("session", "show", "--config", cfg)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "mcp-")
	assert.Contains(t, out, "mcp.memory:create_entities")

	require.NoError(t, cs.Close())
	code, _, errOut = runCLI("log", "verify", "--config", cfg)
	assert.Equal(t, 0, code, errOut)
}
