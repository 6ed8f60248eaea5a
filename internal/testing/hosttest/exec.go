package hosttest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/plugins/exec"
	"github.com/gatehost/gatehost/sdk"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

// The exec gate: run through a host, and natively on what the host pinned.

// GitHubExecConfig is the demonstration policy: non_idempotent tools need a
// confirmation, except opening a pull request, which the operator exempts.
// The GitHub server annotates create_pull_request and merge_pull_request
// identically (readOnlyHint false, idempotentHint false, no destructiveHint),
// so only the operator can tell them apart.
var GitHubExecConfig = json.RawMessage(`{"confirm_effects":["non_idempotent"],"exempt_tools":["mcp.github:create_pull_request"]}`)

// ExecStage is a stage of plugin (the exec gate) with the catalog and
// session capabilities and GitHubExecConfig.
func ExecStage(plugin string) host.StageConfig {
	return host.StageConfig{Plugin: plugin, Capabilities: []string{"catalog", "session"}, Config: GitHubExecConfig}
}

// ExecPipeline is a tool-call pipeline of the one stage ExecStage(plugin).
func ExecPipeline(plugin string) host.PipelineConfig {
	return host.PipelineConfig{Subject: abi.SubjectToolCall, Stages: []host.StageConfig{ExecStage(plugin)}}
}

// ExecHost is a host over store whose pipeline "exec" (tool calls) runs
// the exec gate stages times under GitHubExecConfig, as stages exec0,
// exec1, ….
func ExecHost(t testing.TB, store *catalog.Store, stages int) *host.Host {
	t.Helper()
	execWasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	var ss []host.StageConfig
	for i := range stages {
		st := ExecStage("exec")
		st.Name = "exec" + string(rune('0'+i))
		ss = append(ss, st)
	}
	return New(t, host.Config{
		Plugins:   map[string]host.PluginConfig{"exec": {Path: execWasm}},
		Catalog:   store,
		Pipelines: map[string]host.PipelineConfig{"exec": {Subject: abi.SubjectToolCall, Stages: ss}},
	})
}

// Code is a stage's first finding's code, or its verdict when it has none.
func Code(r host.StageResult) string {
	if len(r.Findings) == 0 {
		return string(r.Verdict)
	}
	return r.Findings[0].Code
}

// ReplaceSchema is a catalog change that gives the tool id the input
// schema schema.
func ReplaceSchema(id, schema string) func(b *catalog.Builder) error {
	return func(b *catalog.Builder) error {
		t, ok := b.Get(id)
		if !ok {
			return catalog.ErrNotFound
		}
		t.InputSchema, t.SchemaDigest = json.RawMessage(schema), ""
		return b.Replace(t)
	}
}

// NativeExecHost is a gatetest host serving snap and the session set.
func NativeExecHost(snap *catalog.Snapshot, set *session.Set, sess string) *gatetest.Host {
	var tools []abi.Tool
	for _, tl := range snap.List() {
		tools = append(tools, tl.ABI())
	}
	gh := gatetest.NewHost(tools...)
	gh.Granted = []string{"catalog", "session"}
	gh.Generation = snap.Generation()
	if sess != "" {
		gh.SessionLookup = func(tool string) abi.SessionGetAnswer { return set.Lookup(sess, tool) }
	}
	return gh
}

// EvalNative runs the exec gate natively on call, against gh, as the host
// would on snap in session sess with confirm and config.
func EvalNative(t testing.TB, gh sdk.Host, snap *catalog.Snapshot, call []byte, sess string, confirm *abi.Confirmation, config json.RawMessage) abi.Response {
	t.Helper()
	resp, err := gatetest.Evaluate(context.Background(), exec.Gate, abi.Request{
		SubjectKind: abi.SubjectToolCall, Subject: call, Config: config,
		Context: abi.Context{CatalogGeneration: snap.Generation(), Session: sess, Confirmation: confirm},
	}, gh)
	require.NoError(t, err)
	return resp
}

// AssertSameAnswer asserts that a native run and a wasm stage answered
// alike: verdict, reason, basis, findings and evidence.
func AssertSameAnswer(t *testing.T, native abi.Response, wasm host.StageResult) {
	t.Helper()
	assert.Equal(t, native.Verdict, wasm.Verdict)
	assert.Equal(t, native.Reason, wasm.Reason)
	assert.Equal(t, native.Basis, wasm.Basis)
	if native.Findings == nil {
		native.Findings = []abi.Finding{}
	}
	nf, _ := json.Marshal(native.Findings)
	wf, _ := json.Marshal(wasm.Findings)
	assert.JSONEq(t, string(nf), string(wf))
	ne, _ := json.Marshal(native.Evidence)
	we, _ := json.Marshal(wasm.Evidence)
	assert.JSONEq(t, string(ne), string(we))
}
