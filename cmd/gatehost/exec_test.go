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

// writeExecConfig writes a config with the exec pipeline and a session file
// over the GitHub catalog at catalogPath.
func writeExecConfig(t *testing.T, catalogPath string) string {
	t.Helper()
	execWasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`
catalog:
  sources:
    - format: mcp
      path: %s
      server: github
event_log:
  path: events.jsonl
sessions:
  path: var/sessions.json
cache_dir: %s
plugins:
  exec:
    path: %s
pipelines:
  exec:
    subject: tool_call
    stages:
      - plugin: exec
        timeout: 60s
        capabilities: [catalog, session]
        config:
          confirm_effects: [non_idempotent]
          exempt_tools: ["mcp.github:create_pull_request"]
`, catalogPath, testwasm.CacheDir(), execWasm)
	path := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

func call(name string) string { return filepath.Join(repoRoot, "testdata/exec/calls", name) }

func TestExecCommands(t *testing.T) {
	github := filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server")
	cfg := writeExecConfig(t, github)

	// Nothing activated yet: every shape is parsed and denied.
	for _, f := range []string{"mcp-params.json", "openai-tool-call.json", "anthropic-tool-use.json", "native.json", "anthropic-message-one-call.json"} {
		code, out, errOut := runCLI("check", "--config", cfg, "--session", "dev", call(f))
		assert.Equal(t, exitRejected, code, "%s: %s%s", f, out, errOut)
		assert.Contains(t, out, "not_activated", f)
	}

	code, out, errOut := runCLI("session", "activate", "--config", cfg, "--session", "dev", "create_pull_request", "merge_pull_request")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "mcp.github:merge_pull_request")
	// All or nothing: one unknown name activates nothing.
	code, _, errOut = runCLI("session", "activate", "--config", cfg, "--session", "dev", "get_me", "Get_Me")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "unknown tool")

	// A restart: the session file keeps the grants.
	code, out, _ = runCLI("check", "--config", cfg, "--session", "dev", call("openai-tool-call.json"))
	assert.Equal(t, exitAccepted, code, out)
	code, out, _ = runCLI("check", "--config", cfg, "--session", "dev", call("anthropic-tool-use.json"))
	assert.Equal(t, exitRejected, code)
	assert.Contains(t, out, "confirmation_required")
	code, out, _ = runCLI("check", "--config", cfg, "--session", "dev", "--confirm", "ok", call("anthropic-tool-use.json"))
	assert.Equal(t, exitAccepted, code, out)
	code, _, _ = runCLI("check", "--config", cfg, "--session", "other", call("openai-tool-call.json"))
	assert.Equal(t, exitRejected, code, "sessions are isolated")

	code, out, _ = runCLI("session", "show", "--config", cfg, "--session", "dev", "--output", "json")
	require.Equal(t, 0, code)
	var view setView
	require.NoError(t, json.Unmarshal([]byte(out), &view))
	require.Len(t, view.Tools, 2)
	assert.Equal(t, "ok", view.Tools[0].Status)

	code, _, _ = runCLI("session", "revoke", "--config", cfg, "--session", "dev", "merge_pull_request")
	require.Equal(t, 0, code)
	code, out, _ = runCLI("check", "--config", cfg, "--session", "dev", "--confirm", "ok", call("anthropic-tool-use.json"))
	assert.Equal(t, exitRejected, code)
	assert.Contains(t, out, "not_activated")

	code, _, errOut = runCLI("session", "revoke", "--config", cfg, "--session", "dev", "merge_pull_request")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not activated")

	// catalog show and diff against a copy with create_pull_request changed.
	code, out, _ = runCLI("catalog", "show", "--config", cfg, "--output", "json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"mcp.github:create_pull_request"`)
	changed := t.TempDir()
	entries, err := os.ReadDir(github)
	require.NoError(t, err)
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".json" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(github, e.Name()))
		require.NoError(t, err)
		if e.Name() == "create_pull_request.json" {
			var m map[string]any
			require.NoError(t, json.Unmarshal(b, &m))
			m["inputSchema"].(map[string]any)["required"] = []string{"owner"}
			b, _ = json.Marshal(m)
		}
		require.NoError(t, os.WriteFile(filepath.Join(changed, e.Name()), b, 0o644))
	}
	code, out, errOut = runCLI("catalog", "diff", "--config", cfg, "--server", "github", "--format", "mcp", changed)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "catalog generation 0 (117 tools) -> 1 (117 tools): 1 changed")
	assert.Contains(t, out, "mcp.github:create_pull_request")
	assert.Contains(t, out, "schema_digest")

	// Against the changed catalog the grant has drifted.
	cfg2 := writeExecConfig(t, changed)
	sessions, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), "var/sessions.json"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(filepath.Dir(cfg2), "var"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(cfg2), "var/sessions.json"), sessions, 0o644))
	code, out, _ = runCLI("check", "--config", cfg2, "--session", "dev", call("openai-tool-call.json"))
	assert.Equal(t, exitRejected, code)
	assert.Contains(t, out, "schema_digest_mismatch")
	code, out, _ = runCLI("session", "rebuild", "--config", cfg2, "--session", "dev")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "dropped mcp.github:create_pull_request (drifted)")

	// Usage errors.
	for _, args := range [][]string{
		{"session"}, {"session", "fly"}, {"session", "activate", "--config", cfg, "--session", "dev"},
		{"session", "activate", "--config", cfg, "get_me"}, {"catalog", "diff", "--config", cfg},
		{"check", "--config", cfg, "--session", "dev", call("mcp-params.json"), "extra"},
	} {
		code, _, _ := runCLI(args...)
		assert.Equal(t, exitUsage, code, args)
	}
	code, _, _ = runCLI("check", "--config", cfg, "--session", "dev", filepath.Join(repoRoot, "testdata/proposals/mcp-tools-call.json"))
	assert.Equal(t, exitUsage, code, "three calls are not one tool_call subject")
}
