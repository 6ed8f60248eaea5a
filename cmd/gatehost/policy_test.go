package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// TestPolicyExamples: gatehost policy test runs the example policies'
// test files, and every case passes.
func TestPolicyExamples(t *testing.T) {
	dir := filepath.Join(repoRoot, "examples/policies")
	code, out, errOut := runCLI("policy", "test", filepath.Join(dir, "filesystem.test.json"), filepath.Join(dir, "github.test.json"))
	assert.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "filesystem.test.json: 23/23 cases")
	assert.Contains(t, out, "github.test.json: 15/15 cases")

	code, out, errOut = runCLI("policy", "test", filepath.Join(dir, "rate-limit.test.json"))
	assert.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "rate-limit.test.json: 9/9 cases")

	code, out, _ = runCLI("policy", "test", "--output", "json", filepath.Join(dir, "github.test.json"))
	assert.Equal(t, 0, code)
	var res []struct {
		Pass  bool `json:"pass"`
		Cases []struct {
			Name     string   `json:"name"`
			Pass     bool     `json:"pass"`
			Verdict  string   `json:"verdict"`
			Policies []string `json:"policies"`
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res, 1)
	assert.True(t, res[0].Pass)
	assert.Equal(t, "a reviewer squashes", res[0].Cases[4].Name)
	assert.Equal(t, []string{"gh-reviewers-merge"}, res[0].Cases[4].Policies)
}

func TestPolicyTestFails(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(repoRoot, "examples/policies")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.cedar"), []byte(`@id("all") permit(principal, action, resource);`), 0o644))
	fixture := `{"catalog":{"path":"` + filepath.Join(root, "server-filesystem.tools.json") + `","server":"fs"},"policies":["p.cedar"],
"cases":[{"name":"wrong","call":{"tool":"write_file","parameters":{"path":"/a","content":"x"}},"expect":{"verdict":"rejected"}}]}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "t.json"), []byte(fixture), 0o644))
	code, out, _ := runCLI("policy", "test", filepath.Join(dir, "t.json"))
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "wrong: [verdict accepted, want rejected]")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.cedar"), []byte(`@id("typo") permit(principal, action == Action::"mcp.fs:write_fil", resource);`), 0o644))
	code, out, _ = runCLI("policy", "test", filepath.Join(dir, "t.json"))
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "the policies do not validate")
	assert.Contains(t, out, `did you mean "mcp.fs:write_file"?`)
}

func TestPolicyValidate(t *testing.T) {
	gh := filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server")
	examples := filepath.Join(repoRoot, "examples/policies")
	code, out, errOut := runCLI("policy", "validate", "--catalog", gh, "--server", "github", "--claim", "roles=Set<String>", filepath.Join(examples, "github.cedar"))
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "VALID    6 policies against 117 tools")

	bad := filepath.Join(t.TempDir(), "bad.cedar")
	require.NoError(t, os.WriteFile(bad, []byte("@id(\"p\")\npermit(principal, action == Action::\"mcp.github:merge_pull_request\", resource)\nwhen { context.arguments.merge_methd == \"squash\" };\n"), 0o644))
	code, out, _ = runCLI("policy", "validate", "--catalog", gh, "--server", "github", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, bad+`:3:26: policy p: tool mcp.github:merge_pull_request has no argument "merge_methd" (did you mean "merge_method"?)`)

	code, out, _ = runCLI("policy", "validate", "--output", "json", "--catalog", gh, "--server", "github", bad)
	assert.Equal(t, 1, code)
	var res struct {
		Valid    bool `json:"valid"`
		Problems []struct {
			Kind       string `json:"kind"`
			Line       int    `json:"line"`
			Column     int    `json:"column"`
			Suggestion string `json:"suggestion"`
		} `json:"problems"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.False(t, res.Valid)
	require.Len(t, res.Problems, 1)
	assert.Equal(t, "argument", res.Problems[0].Kind)
	assert.Equal(t, "merge_method", res.Problems[0].Suggestion)

	code, _, errOut = runCLI("policy", "validate", bad)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--catalog FILE is required")
	code, _, errOut = runCLI("policy", "validate", "--catalog", gh, "--claim", "roles", bad)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "want NAME=TYPE")
}

func TestPolicySchema(t *testing.T) {
	code, out, errOut := runCLI("policy", "schema", "--catalog", filepath.Join(repoRoot, "examples/policies/server-filesystem.tools.json"), "--server", "fs")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `action "mcp.fs:write_file" in ["non_idempotent", "destructive", "mcp.fs:*"] appliesTo {`)
	assert.Contains(t, out, "entity Caller = {")

	code, out, _ = runCLI("policy", "schema", "--output", "json", "--catalog", filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server"), "--server", "github")
	assert.Equal(t, 0, code)
	var res struct {
		Tools   int `json:"tools"`
		Omitted []struct {
			Tool, Argument string
		} `json:"omitted"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, 117, res.Tools)
	assert.NotEmpty(t, res.Omitted)
}

// TestPolicyGateEndToEnd: a config names the built-in policy gate and the
// example rules by policy_files, over the server-filesystem catalog;
// gatehost check decides calls with it, and plugin inspect shows the
// built-in module.
func TestPolicyGateEndToEnd(t *testing.T) {
	mod, err := testwasm.Go("plugins/policy/wasm")
	require.NoError(t, err)
	plugins := t.TempDir()
	require.NoError(t, os.Symlink(mod, filepath.Join(plugins, "policy.wasm")))
	t.Setenv(config.PluginDirEnv, plugins)
	dir := t.TempDir()
	examples := filepath.Join(repoRoot, "examples/policies")
	cfg := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`event_log: {path: events.jsonl}
cache_dir: `+testwasm.CacheDir()+`
catalog: {sources: [{path: `+filepath.Join(examples, "server-filesystem.tools.json")+`, format: mcp, server: fs}]}
plugins: {cedar: {builtin: policy}}
pipelines:
  calls:
    subject: tool_call
    stages:
      - {plugin: cedar, timeout: 60s, capabilities: [catalog], config: {policy_files: [`+filepath.Join(examples, "filesystem.cedar")+`]}}
`), 0o644))
	for _, tc := range []struct {
		params, code string
		exit         int
	}{
		{`{"path":"/srv/share/public/a.md","content":"x"}`, "", exitAccepted},
		{`{"path":"/srv/share/public/../a.md","content":"x"}`, "policy_no_permit", exitRejected},
		{`{"path":"/srv/share/public/k","content":"-----BEGIN PRIVATE KEY-----"}`, "policy_forbid", exitRejected},
	} {
		call := filepath.Join(dir, "call.json")
		require.NoError(t, os.WriteFile(call, []byte(`{"tool":"write_file","parameters":`+tc.params+`}`), 0o644))
		code, out, errOut := runCLI("check", "--config", cfg, call)
		assert.Equal(t, tc.exit, code, "%s%s", out, errOut)
		assert.Contains(t, out, tc.code)
	}
	code, out, errOut := runCLI("plugin", "inspect", "builtin:policy")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "builtin  policy")
}

// TestPolicyGateByPathChecked: a policy gate given by path, not as the
// built-in, is type-checked against the file catalog once its module is
// loaded (its descriptor names it policy), as the built-in is at load: a
// misspelt argument or an undeclared window refuses the config, naming
// the stage and the nearest real name, instead of deciding calls.
func TestPolicyGateByPathChecked(t *testing.T) {
	mod, err := testwasm.Go("plugins/policy/wasm")
	require.NoError(t, err)
	dir := t.TempDir()
	examples := filepath.Join(repoRoot, "examples/policies")
	for _, tc := range []struct {
		name, config string
		exit         int
		want         []string
	}{
		{name: "valid", config: `{policies: [{file: p.cedar, text: 'permit(principal, action, resource) when { context.paths has path && context.paths.path like "/srv/share/public/*" };'}]}`,
			exit: exitAccepted},
		{name: "misspelt argument", config: `{policies: [{file: p.cedar, text: 'permit(principal, action, resource); forbid(principal, action == Action::"mcp.fs:write_file", resource) when { context.arguments.pth like "/srv/*" };'}]}`,
			exit: exitUsage, want: []string{"pipelines.calls.stages[0].config.policies: against the catalog: p.cedar:1:", `did you mean "path"`}},
		{name: "window the host does not count", config: `{windows: [1h], policies: [{file: p.cedar, text: 'permit(principal, action, resource);'}]}`,
			exit: exitUsage, want: []string{"pipelines.calls.stages[0].config.windows: window 1h is not one the host counts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(dir, "gatehost.yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(`event_log: {path: events.jsonl}
cache_dir: `+testwasm.CacheDir()+`
catalog: {sources: [{path: `+filepath.Join(examples, "server-filesystem.tools.json")+`, format: mcp, server: fs}]}
plugins: {cedar: {path: `+mod+`}}
pipelines:
  calls:
    subject: tool_call
    stages:
      - {plugin: cedar, timeout: 60s, capabilities: [catalog], config: `+tc.config+`}
`), 0o644))
			call := filepath.Join(dir, "call.json")
			require.NoError(t, os.WriteFile(call, []byte(`{"tool":"write_file","parameters":{"path":"/srv/share/public/a.md","content":"x"}}`), 0o644))
			code, out, errOut := runCLI("check", "--config", cfg, call)
			assert.Equal(t, tc.exit, code, "%s%s", out, errOut)
			for _, w := range tc.want {
				assert.Contains(t, errOut, w)
			}
			if tc.exit == exitUsage { // bench checks the config as check does
				code, out, errOut = runCLI("bench", "--config", cfg, "--pipeline", "calls", "-n", "1", call)
				assert.Equal(t, exitUsage, code, "%s%s", out, errOut)
				assert.Contains(t, errOut, tc.want[0])
			}
		})
	}
}
