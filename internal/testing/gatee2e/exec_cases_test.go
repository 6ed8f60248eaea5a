package gatee2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/plugins/exec"
)

// execStep is one step of an exec case: optional catalog and session
// changes, then one call whose answer must be want ("" for accepted).
type execStep struct {
	catalog func(b *catalog.Builder) error
	prepare func(ctx context.Context, st session.Store, snap *catalog.Snapshot) error
	call    string
	session string
	confirm *abi.Confirmation
	want    string
	basis   string // checked when accepted
}

func activate(sess string, names ...string) func(context.Context, session.Store, *catalog.Snapshot) error {
	return func(ctx context.Context, st session.Store, snap *catalog.Snapshot) error {
		_, err := session.ActivateMany(ctx, st, snap, sess, names)
		return err
	}
}

// execCases are the origin's test cases (docs/GATES.md#exec) and one case per
// denial code and basis.
var execCases = []struct {
	name  string
	steps []execStep
}{
	{"unactivated tool is denied", []execStep{
		{call: "files_read", session: "s", want: exec.CodeNotActivated},
		{prepare: activate("s", "ext__srv__echo_tool"), call: "files_read", session: "s", want: exec.CodeNotActivated},
		{call: "files_read", want: exec.CodeNotActivated}, // no session at all
	}},
	{"alias and case forgeries are denied", []execStep{
		{prepare: activate("s", "ext.srv:echo_tool", "plugin.core:search"), call: "EXT__SRV__ECHO_TOOL", session: "s", want: exec.CodeUnknownTool},
		{call: "plugin_search", session: "s", want: exec.CodeUnknownTool},
		{call: "plugin:search", session: "s", want: exec.CodeUnknownTool},
		{call: "Plugin__core__search", session: "s", want: exec.CodeUnknownTool},
		{call: "ECHO", session: "s", want: exec.CodeUnknownTool},
		{call: "ext__srv__echo_tool ", session: "s", want: exec.CodeUnknownTool},
		// The registered names resolve to the one identity.
		{call: "ext__srv__echo_tool", session: "s", basis: exec.BasisExact},
		{call: "echo", session: "s", basis: exec.BasisExact},
		{call: "ext.srv:echo_tool", session: "s", basis: exec.BasisExact},
		{call: "plugin__core__search", session: "s", basis: exec.BasisExact},
	}},
	{"activating one MCP tool leaves its sibling denied", []execStep{
		{prepare: activate("s", "files_read"), call: "files_read", session: "s", basis: exec.BasisExact},
		{call: "files_write", session: "s", want: exec.CodeNotActivated},
	}},
	{"an activation does not carry to another session", []execStep{
		{prepare: activate("s1", "files_read"), call: "files_read", session: "s1", basis: exec.BasisExact},
		{call: "files_read", session: "s2", want: exec.CodeNotActivated},
	}},
	{"after a revoke the call is not_activated", []execStep{
		{prepare: activate("s", "files_read"), call: "files_read", session: "s", basis: exec.BasisExact},
		{prepare: func(ctx context.Context, st session.Store, snap *catalog.Snapshot) error {
			_, err := session.Revoke(ctx, st, snap, "s", "files_read")
			return err
		}, call: "files_read", session: "s", want: exec.CodeNotActivated},
	}},
	{"an unrelated catalog change leaves the activated call allowed", []execStep{
		{prepare: activate("s", "files_read"), call: "files_read", session: "s", basis: exec.BasisExact},
		{catalog: func(b *catalog.Builder) error {
			if err := hosttest.ReplaceSchema("mcp.files:write", `{"type":"object","properties":{"path":{"type":"string"}}}`)(b); err != nil {
				return err
			}
			return b.Add(catalog.Tool{ID: "plugin.late:loaded", Name: "late_loaded", Provenance: "plugin_config{late}", Source: "late"})
		}, call: "files_read", session: "s", basis: exec.BasisExact},
	}},
	{"a changed schema gives schema_digest_mismatch", []execStep{
		{prepare: activate("s", "files_read"), call: "files_read", session: "s", basis: exec.BasisExact},
		{catalog: hosttest.ReplaceSchema("mcp.files:read", `{"type":"object","properties":{"path":{"type":"string"},"mode":{"type":"string"}}}`),
			call: "files_read", session: "s", want: exec.CodeSchemaDigestMismatch},
	}},
	{"a grant at the current generation with another digest gives schema_digest_mismatch", []execStep{
		{prepare: func(ctx context.Context, st session.Store, snap *catalog.Snapshot) error {
			_, err := st.Update(ctx, "s", func(*session.Set) (*session.Set, error) {
				return &session.Set{ID: "s", Activated: map[string]session.Activation{"mcp.files:read": {
					Grant:      session.Grant{Session: "s", Tool: "mcp.files:read", CatalogGeneration: snap.Generation(), SchemaDigest: "0000000000000000000000000000000000000000000000000000000000000000"},
					Provenance: "mcp_config{files}",
				}}}, nil
			})
			return err
		}, call: "files_read", session: "s", want: exec.CodeSchemaDigestMismatch},
	}},
	{"an identical schema re-added with another provenance gives source_provenance_mismatch", []execStep{
		{prepare: activate("s", "files_read"), call: "files_read", session: "s", basis: exec.BasisExact},
		{catalog: func(b *catalog.Builder) error { return b.Remove("mcp.files:read") },
			call: "files_read", session: "s", want: exec.CodeUnknownTool},
		{catalog: func(b *catalog.Builder) error {
			return b.Add(catalog.Tool{ID: "mcp.files:read", Name: "files_read",
				InputSchema: json.RawMessage(`{"required":["path"],"properties":{"path":{"type":"string"}},"type":"object"}`),
				Provenance:  "plugin_config{files}", Source: "files", Effect: catalog.EffectReadOnly})
		}, call: "files_read", session: "s", want: exec.CodeSourceProvenanceMismatch},
	}},
	{"a core pin authorizes without a grant", []execStep{
		{prepare: func(ctx context.Context, st session.Store, snap *catalog.Snapshot) error {
			_, err := session.Create(ctx, st, snap, "s", "read_file")
			return err
		}, call: "read_file", session: "s", basis: exec.BasisCore},
		{call: "builtin:read_file", session: "s", basis: exec.BasisCore},
	}},
	{"an id shaped name the catalog lacks is not_cataloged", []execStep{
		{prepare: activate("s", "files_read"), call: "mcp.files:gone", session: "s", want: exec.CodeNotCataloged},
		{call: "MCP.files:read", session: "s", want: exec.CodeUnknownTool},
	}},
	{"unverified provenance is untrusted_source", []execStep{
		{prepare: func(ctx context.Context, st session.Store, snap *catalog.Snapshot) error {
			_, err := st.Update(ctx, "s", func(*session.Set) (*session.Set, error) {
				t, _ := snap.Get("stray")
				return &session.Set{ID: "s", Core: map[string]session.Pin{t.ID: {SchemaDigest: t.SchemaDigest, PolicyDigest: t.PolicyDigest, Provenance: t.Provenance}}}, nil
			})
			return err
		}, call: "stray", session: "s", want: exec.CodeUntrustedSource},
	}},
	{"provenance naming another source is source_provenance_mismatch", []execStep{
		{prepare: activate("s", "files_odd"), call: "files_odd", session: "s", want: exec.CodeSourceProvenanceMismatch},
	}},
	{"a non_idempotent tool needs a confirmation of this call", []execStep{
		{prepare: activate("s", "files_write"), call: "files_write", session: "s", want: exec.CodeConfirmationRequired},
		{call: "files_write", session: "s", confirm: &abi.Confirmation{Tool: "mcp.files:read", Token: "t-1"}, want: exec.CodeConfirmationRequired},
		{call: "files_write", session: "s", confirm: &abi.Confirmation{Tool: "mcp.files:write", Token: ""}, want: exec.CodeConfirmationRequired},
		{call: "files_write", session: "s", confirm: &abi.Confirmation{Tool: "mcp.files:write", Token: "t-1"}, basis: exec.BasisExact},
	}},
}

func loadExecCatalog(t testing.TB) []catalog.Tool {
	t.Helper()
	tools, err := catalog.Load(filepath.Join(repoRoot, "testdata/exec/catalog.json"), catalog.ImportOptions{Format: catalog.FormatNative})
	require.NoError(t, err)
	return tools
}

// nativeExec runs the exec gate natively (sdk/gatetest) on the same
// snapshot and session set the host pinned for the run.
func nativeExec(t testing.TB, snap *catalog.Snapshot, set *session.Set, call []byte, sess string, confirm *abi.Confirmation, config json.RawMessage) abi.Response {
	t.Helper()
	return hosttest.EvalNative(t, hosttest.NativeExecHost(snap, set, sess), snap, call, sess, confirm, config)
}

// TestExecOriginCasesNativeEqualsWasm runs every origin case of docs/GATES.md#exec
// through the wasm gate in a host and natively, and requires both to give
// the wanted answer and the same answer.
func TestExecOriginCasesNativeEqualsWasm(t *testing.T) {
	ctx := context.Background()
	store, err := catalog.NewStore()
	require.NoError(t, err)
	h := hosttest.New(t, host.Config{
		Plugins:   map[string]host.PluginConfig{"exec": {Path: execWasm}},
		Catalog:   store,
		Confirmer: passConfirmer{},
		Pipelines: map[string]host.PipelineConfig{"exec": {Subject: abi.SubjectToolCall, Stages: []host.StageConfig{{
			Plugin: "exec", Capabilities: []string{"catalog", "session"},
		}}}},
	})
	fixture := loadExecCatalog(t)
	codes := map[string]bool{}
	for ci, c := range execCases {
		t.Run(c.name, func(t *testing.T) {
			// A fresh catalog and fresh session ids for each case.
			_, err := store.Update(func(b *catalog.Builder) error {
				for _, id := range b.IDs() {
					if err := b.Remove(id); err != nil {
						return err
					}
				}
				for _, tl := range fixture {
					if err := b.Add(tl); err != nil {
						return err
					}
				}
				return nil
			})
			require.NoError(t, err)
			sess := func(s string) string {
				if s == "" {
					return ""
				}
				return s + "-" + string(rune('a'+ci))
			}
			for i, st := range c.steps {
				if st.catalog != nil {
					_, err := store.Update(st.catalog)
					require.NoError(t, err, "step %d catalog", i)
				}
				if st.prepare != nil {
					// Steps name sessions "s", "s1", "s2"; prepare sees them
					// through a store that renames them for this case.
					require.NoError(t, st.prepare(ctx, renamed{h.Sessions(), sess}, store.Snapshot()), "step %d prepare", i)
				}
				call, _ := json.Marshal(abi.ToolCall{Tool: st.call, Parameters: json.RawMessage(`{"secret":"do-not-echo"}`)})
				d, err := h.Check(ctx, "exec", call, host.RunOptions{Session: sess(st.session), ConfirmationToken: passToken(st.confirm)})
				require.NoError(t, err)
				wasm := d.Stages[0]
				set, err := h.Sessions().Load(ctx, sess(st.session))
				require.NoError(t, err)
				snap := store.Snapshot()
				require.Equal(t, snap.Generation(), d.CatalogGeneration)
				native := nativeExec(t, snap, set, call, sess(st.session), st.confirm, nil)
				hosttest.AssertSameAnswer(t, native, wasm)

				if st.want == "" {
					require.Equal(t, abi.Accepted, wasm.Verdict, "step %d (%s): %+v", i, st.call, wasm.Findings)
					assert.Equal(t, st.basis, wasm.Basis, "step %d", i)
				} else {
					require.Equal(t, abi.Rejected, wasm.Verdict, "step %d (%s)", i, st.call)
					require.Len(t, wasm.Findings, 1)
					assert.Equal(t, st.want, wasm.Findings[0].Code, "step %d (%s): %s", i, st.call, wasm.Findings[0].Message)
					assert.NotContains(t, wasm.Findings[0].Message, "do-not-echo")
					codes[st.want] = true
				}
			}
		})
	}
	for _, code := range []string{exec.CodeUnknownTool, exec.CodeNotCataloged, exec.CodeNotActivated, exec.CodeSchemaDigestMismatch,
		exec.CodeSourceProvenanceMismatch, exec.CodeUntrustedSource, exec.CodeConfirmationRequired} {
		assert.True(t, codes[code], "no case produced %s", code)
	}
}

// renamed is a session.Store that maps the ids a case uses to ids unique to
// the case.
type renamed struct {
	session.Store
	name func(string) string
}

func (r renamed) Load(ctx context.Context, id string) (*session.Set, error) {
	return r.Store.Load(ctx, r.name(id))
}

func (r renamed) Update(ctx context.Context, id string, fn func(*session.Set) (*session.Set, error)) (*session.Set, error) {
	id = r.name(id)
	return r.Store.Update(ctx, id, func(cur *session.Set) (*session.Set, error) {
		next, err := fn(cur)
		if next != nil && next.ID != id { // sets built by hand in a case
			next = next.Clone()
			old := next.ID
			next.ID = id
			for k, a := range next.Activated {
				if a.Grant.Session == old {
					a.Grant.Session = id
				}
				next.Activated[k] = a
			}
		}
		return next, err
	})
}
