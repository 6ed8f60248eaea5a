package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/policy"
)

// TestPolicyFiles: a policy stage's policy_files are read relative to the
// config file and appended to its policies; another gate's config is
// passed as written.
func TestPolicyFiles(t *testing.T) {
	plugins := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(plugins, "policy.wasm"), []byte("m"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(plugins, "exec.wasm"), []byte("m"), 0o644))
	t.Setenv(PluginDirEnv, plugins)
	cfgPath := write(t, "g.yaml", `event_log: {path: e.jsonl}
plugins:
  cedar: {builtin: policy}
  other: {builtin: exec}
pipelines:
  calls:
    subject: tool_call
    stages:
      - {plugin: cedar, config: {policy_files: [rules/a.cedar], policies: [{text: "forbid(principal, action, resource);"}], claims: {roles: "Set<String>"}}}
      - {plugin: other, config: {policy_files: [x]}}
`)
	dir := filepath.Dir(cfgPath)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "rules"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules", "a.cedar"), []byte(`permit(principal, action, resource);`), 0o644))
	l, err := Load(cfgPath)
	require.NoError(t, err)
	defer l.Close()
	stages := l.Host.Pipelines["calls"].Stages
	var got struct {
		Policies []struct{ File, Text string }
		Claims   map[string]string
	}
	require.NoError(t, json.Unmarshal(stages[0].Config, &got))
	assert.Equal(t, []struct{ File, Text string }{
		{Text: "forbid(principal, action, resource);"},
		{File: "rules/a.cedar", Text: "permit(principal, action, resource);"},
	}, got.Policies)
	assert.Equal(t, map[string]string{"roles": "Set<String>"}, got.Claims)
	assert.NotContains(t, string(stages[0].Config), "policy_files")
	assert.JSONEq(t, `{"policy_files":["x"]}`, string(stages[1].Config))

	require.NoError(t, os.Remove(filepath.Join(dir, "rules", "a.cedar")))
	_, err = Load(cfgPath)
	var pe *PolicyFileError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "rules/a.cedar", pe.File)
	assert.Contains(t, err.Error(), "pipelines.calls.stages[0].config: policy_files: rules/a.cedar:")
}

func TestInlinePolicyFilesShapes(t *testing.T) {
	rel := func(p string) string { return p }
	for _, raw := range []string{``, `null`, `[]`, `{"policies":[]}`} {
		out, err := inlinePolicyFiles(json.RawMessage(raw), rel)
		require.NoError(t, err, raw)
		assert.Equal(t, raw, string(out))
	}
	for _, raw := range []string{`{"policy_files":"a.cedar"}`, `{"policy_files":[1]}`, `{"policy_files":[""]}`} {
		_, err := inlinePolicyFiles(json.RawMessage(raw), rel)
		var pe *PolicyFileError
		require.ErrorAs(t, err, &pe, raw)
	}
}

// TestPolicyStageRefusesBadPolicies: a policy that does not parse, two
// policies with one id or an unknown claim type refuse the config.
func TestPolicyStageRefusesBadPolicies(t *testing.T) {
	rel := func(p string) string { return p }
	for _, tc := range []struct{ raw, want string }{
		{`{"policies":[{"file":"a.cedar","text":"permit(principal"}]}`, "policies: a.cedar:"},
		{`{"policies":[{"text":"@id(\"x\") permit(principal, action, resource); @id(\"x\") forbid(principal, action, resource);"}]}`, `policy id "x" is also the id`},
		{`{"claims":{"roles":"List"}}`, "claims.roles:"},
	} {
		_, err := policyStageConfig(json.RawMessage(tc.raw), rel)
		require.Error(t, err, tc.raw)
		assert.Contains(t, err.Error(), tc.want)
	}
	out, err := policyStageConfig(json.RawMessage(`{"policies":[{"text":"permit(principal, action, resource);"}]}`), rel)
	require.NoError(t, err)
	assert.JSONEq(t, `{"policies":[{"text":"permit(principal, action, resource);"}]}`, string(out))
}

// TestPolicyStageAgainstFileCatalog: with catalog.sources, a policy
// naming a tool the catalog does not have refuses the config, with the
// nearest real name.
func TestPolicyStageAgainstFileCatalog(t *testing.T) {
	plugins := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(plugins, "policy.wasm"), []byte("m"), 0o644))
	t.Setenv(PluginDirEnv, plugins)
	tools, err := filepath.Abs("../examples/policies/server-filesystem.tools.json")
	require.NoError(t, err)
	doc := func(text string) string {
		return `event_log: {path: e.jsonl}
catalog: {sources: [{path: ` + tools + `, format: mcp, server: fs}]}
plugins: {cedar: {builtin: policy}}
pipelines:
  calls:
    subject: tool_call
    stages: [{plugin: cedar, capabilities: [catalog], config: {policies: [{file: p.cedar, text: '` + text + `'}]}}]
`
	}
	l, err := Load(write(t, "g.yaml", doc(`permit(principal, action == Action::"mcp.fs:write_file", resource) when { context.paths.path like "/srv/*" };`)))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	_, err = Load(write(t, "g.yaml", doc(`permit(principal, action == Action::"mcp.fs:write_file", resource) when { context.paths.pth like "/srv/*" };`)))
	var ve *policy.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, err.Error(), `pipelines.calls.stages[0].config.policies: against the catalog: p.cedar:1:89:`)
	assert.Contains(t, err.Error(), `(did you mean "path"?)`)

	// The gateway's pipeline decides against the upstreams' tools, which
	// are not known at load: it is not checked here.
	l, err = Load(write(t, "g.yaml", "mcp: {pipeline: calls}\n"+doc(`permit(principal, action == Action::"mcp.other:tool", resource);`)))
	require.NoError(t, err)
	require.NoError(t, l.Close())
}
