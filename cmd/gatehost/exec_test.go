package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// writeExecConfig writes a config with the exec pipeline and a session file
// over the GitHub catalog at catalogPath.
func writeExecConfig(t *testing.T, catalogPath string) string {
	t.Helper()
	return writeExecConfigServer(t, catalogPath, "github", `["mcp.github:create_pull_request"]`)
}

// writeExecConfigServer writes the exec config over the catalog at
// catalogPath of the named server, with exempt_tools exempt (a YAML list):
// every id it names must be in the catalog, or the config is refused.
func writeExecConfigServer(t *testing.T, catalogPath, server, exempt string) string {
	t.Helper()
	execWasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`
catalog:
  sources:
    - format: mcp
      path: %s
      server: %s
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
          exempt_tools: %s
`, catalogPath, server, testwasm.CacheDir(), execWasm, exempt)
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
	assert.Contains(t, out, "dropped mcp.github:create_pull_request (drifted: schema_digest,policy_digest)")

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

// copyDrift copies a file of testdata/exec/drift into dir under name.
func copyDrift(t *testing.T, from, dir, name string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "testdata/exec/drift", from))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
}

func writeCall(t *testing.T, tool string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "call.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"tool":"`+tool+`","parameters":{"owner":"octo-org","repo":"widgets","pullNumber":7}}`), 0o644))
	return p
}

// TestExecDestructiveHintCLI: a tool annotated destructive and idempotent
// needs a confirmation under confirm_effects [non_idempotent].
func TestExecDestructiveHintCLI(t *testing.T) {
	tools := t.TempDir()
	copyDrift(t, "delete_repository.json", tools, "delete_repository.json")
	cfg := writeExecConfigServer(t, tools, "demo", "[]")
	code, _, errOut := runCLI("session", "activate", "--config", cfg, "--session", "s", "delete_repository")
	require.Equal(t, 0, code, errOut)
	code, out, _ := runCLI("check", "--config", cfg, "--session", "s", writeCall(t, "delete_repository"))
	assert.Equal(t, exitRejected, code, out)
	assert.Contains(t, out, "confirmation_required")
	assert.Contains(t, out, "effect non_idempotent")
	code, out, _ = runCLI("catalog", "show", "--config", cfg, "--output", "json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"destructive": true`)
	assert.Contains(t, out, `"effect": "non_idempotent"`)
}

// TestExecAnnotationDriftCLI: the same schema re-published read-only after
// a grant is denied as drift; session show and rebuild report it; granting
// again accepts it. A session file written before policy digests is read
// and its grants count as drifted.
func TestExecAnnotationDriftCLI(t *testing.T) {
	tools := t.TempDir()
	copyDrift(t, "merge_pull_request.v1.json", tools, "merge_pull_request.json")
	cfg := writeExecConfigServer(t, tools, "github", "[]")
	callFile := writeCall(t, "merge_pull_request")

	code, _, errOut := runCLI("session", "activate", "--config", cfg, "--session", "dev", "merge_pull_request")
	require.Equal(t, 0, code, errOut)
	code, out, _ := runCLI("check", "--config", cfg, "--session", "dev", callFile)
	assert.Equal(t, exitRejected, code)
	assert.Contains(t, out, "confirmation_required", "as granted: a write")

	copyDrift(t, "merge_pull_request.v2-readonly.json", tools, "merge_pull_request.json")
	code, out, _ = runCLI("check", "--config", cfg, "--session", "dev", callFile)
	assert.Equal(t, exitRejected, code, out)
	assert.Contains(t, out, "tool_drifted")
	assert.Contains(t, out, "grant it again")

	code, out, _ = runCLI("session", "show", "--config", cfg, "--session", "dev")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "drifted: policy_digest")
	code, out, _ = runCLI("session", "show", "--config", cfg, "--session", "dev", "--output", "json")
	require.Equal(t, 0, code)
	var view setView
	require.NoError(t, json.Unmarshal([]byte(out), &view))
	require.Len(t, view.Tools, 1)
	assert.Equal(t, "drifted", view.Tools[0].Status)
	assert.Equal(t, []string{"policy_digest"}, view.Tools[0].Drift)
	assert.Len(t, view.Tools[0].PolicyDigest, 64)

	// Granting again accepts the read-only tool without a confirmation.
	code, _, errOut = runCLI("session", "activate", "--config", cfg, "--session", "dev", "merge_pull_request")
	require.Equal(t, 0, code, errOut)
	code, out, _ = runCLI("check", "--config", cfg, "--session", "dev", callFile)
	assert.Equal(t, exitAccepted, code, out)

	// Back to the write: rebuild drops the read-only grant and says why.
	copyDrift(t, "merge_pull_request.v1.json", tools, "merge_pull_request.json")
	code, out, _ = runCLI("session", "rebuild", "--config", cfg, "--session", "dev", "--output", "json")
	require.Equal(t, 0, code)
	var rebuilt struct {
		Report struct {
			Dropped []struct {
				Tool   string   `json:"tool"`
				Reason string   `json:"reason"`
				Drift  []string `json:"drift"`
			} `json:"dropped"`
		} `json:"report"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rebuilt))
	require.Len(t, rebuilt.Report.Dropped, 1)
	assert.Equal(t, "drifted", rebuilt.Report.Dropped[0].Reason)
	assert.Equal(t, []string{"policy_digest"}, rebuilt.Report.Dropped[0].Drift)

	// A session file from before policy digests: readable, drifted.
	code, out, _ = runCLI("catalog", "show", "--config", cfg, "--output", "json")
	require.Equal(t, 0, code)
	var cat struct {
		Tools []struct {
			SchemaDigest string `json:"schema_digest"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &cat))
	require.Len(t, cat.Tools, 1)
	legacy := fmt.Sprintf(`{"format":1,"sessions":{"old":{"id":"old","version":1,"core":{},"activated":{"mcp.github:merge_pull_request":{"grant":{"session":"old","tool":"mcp.github:merge_pull_request","catalog_generation":0,"schema_digest":%q},"provenance":"mcp_config{github}"}}}}}`, cat.Tools[0].SchemaDigest)
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(cfg), "var/sessions.json"), []byte(legacy), 0o644))
	code, out, _ = runCLI("check", "--config", cfg, "--session", "old", "--confirm", "ok", callFile)
	assert.Equal(t, exitRejected, code, out)
	assert.Contains(t, out, "tool_drifted")
	assert.Contains(t, out, "predates policy digests")
	code, out, _ = runCLI("session", "show", "--config", cfg, "--session", "old")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "drifted: policy_unpinned")
}
