package host_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/host/domain"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// TestHostToolReferences: the host collects the exec gate's annotated
// config values and the capabilities of the domain a preconditions stage
// names, and the checker finds the ones the catalog does not hold.
func TestHostToolReferences(t *testing.T) {
	dom, err := domain.Parse([]byte(`{domain: files, version: 1, capabilities: {
	  read_file: {kind: get},
	  mv: {kind: update, tools: [move_file]},
	  remove_everything: {kind: delete}}}`))
	require.NoError(t, err)
	var tools []catalog.Tool
	for _, n := range []string{"read_file", "edit_file", "move_file"} {
		tools = append(tools, catalog.Tool{ID: "mcp.fs:" + n, Name: n, Source: "fs"})
	}
	store, err := catalog.NewStore(tools...)
	require.NoError(t, err)
	pc := func(domain string) host.StageConfig {
		return host.StageConfig{Plugin: "preconditions", Capabilities: []string{"query"}, Config: json.RawMessage(`{"domain":"` + domain + `"}`)}
	}
	h := hosttest.New(t, host.Config{
		Plugins: map[string]host.PluginConfig{"exec": {Path: execWasm}, "preconditions": {Path: hosttest.PreconditionsWasm(t)}},
		Pipelines: map[string]host.PipelineConfig{
			"p": {Subject: "tool_call", Stages: []host.StageConfig{
				{Plugin: "exec", Capabilities: []string{"catalog", "session"}, Config: json.RawMessage(
					`{"confirm_tools":["mcp.fs:edit_file","mcp.fs:move_fil"],"principals":[{"when":{"authenticated":true},"allow_tools":["*"]}]}`)},
				pc("files"),
			}},
			"q": {Subject: "tool_call", Stages: []host.StageConfig{pc("files")}},
		},
		Catalog: store,
		Domains: map[string]host.Domain{"files": {Catalog: dom, Source: datasource.NewDocuments(nil), File: "files.yaml"}},
	})

	refs := h.ToolReferences("p")
	via := "pipelines.p.stages[1].config.domain"
	assert.Equal(t, []host.ToolReference{
		{Field: "pipelines.p.stages[0].config.confirm_tools[0]", Name: "mcp.fs:edit_file", Kind: host.RefToolID},
		{Field: "pipelines.p.stages[0].config.confirm_tools[1]", Name: "mcp.fs:move_fil", Kind: host.RefToolID},
		{Field: "pipelines.p.stages[0].config.principals[0].allow_tools[0]", Name: "*", Kind: host.RefToolID, Wildcard: true},
		{Field: "domains.files.capabilities.mv", Name: "mv", Kind: host.RefTool, Alternatives: []string{"move_file"}, Via: via, File: "files.yaml"},
		{Field: "domains.files.capabilities.read_file", Name: "read_file", Kind: host.RefTool, Via: via, File: "files.yaml"},
		{Field: "domains.files.capabilities.remove_everything", Name: "remove_everything", Kind: host.RefTool, Via: via, File: "files.yaml"},
	}, refs)
	assert.True(t, h.ReadsCatalog("p"))
	assert.False(t, h.ReadsCatalog("q"), "a preconditions stage alone does not read the catalog")
	assert.Nil(t, h.ToolReferences("nope"))

	err = host.CheckToolReferences(refs, store.Snapshot())
	require.ErrorIs(t, err, host.ErrUnmatchedTool)
	var ue *host.UnmatchedToolError
	require.True(t, errors.As(err, &ue))
	require.Len(t, ue.Unmatched, 2)
	assert.Equal(t, "mcp.fs:move_file", ue.Unmatched[0].Suggestion)
	assert.Equal(t, "remove_everything", ue.Unmatched[1].Ref.Name)
	assert.Contains(t, err.Error(), `domains.files.capabilities.remove_everything (files.yaml; the domain of pipelines.p.stages[1].config.domain): "remove_everything" matches no tool`)
}
