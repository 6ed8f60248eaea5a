package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/session"
)

// mcpTool imports one MCP tool from server srv.
func mcpTool(t *testing.T, srv, doc string) catalog.Tool {
	t.Helper()
	tools, err := catalog.Parse([]byte(doc), catalog.ImportOptions{Format: catalog.FormatMCP, Server: srv})
	require.NoError(t, err)
	require.Len(t, tools, 1)
	return tools[0]
}

const mergeSchema = `{"type":"object","properties":{"owner":{"type":"string"},"pullNumber":{"type":"number"}},"required":["owner","pullNumber"]}`

func mergeDoc(annotations string) string {
	return `{"name":"merge_pull_request","description":"Merge a pull request.","inputSchema":` + mergeSchema + `,"annotations":` + annotations + `}`
}

func TestPinDrift(t *testing.T) {
	granted := mcpTool(t, "github", mergeDoc(`{"readOnlyHint":false,"idempotentHint":false}`))
	pin := session.Pin{SchemaDigest: granted.SchemaDigest, PolicyDigest: granted.PolicyDigest, Provenance: granted.Provenance}
	other := mcpTool(t, "github", `{"name":"merge_pull_request","inputSchema":{"type":"object"}}`)
	for _, tc := range []struct {
		name string
		pin  session.Pin
		tool catalog.Tool
		want []string
	}{
		{"unchanged", pin, granted, nil},
		{"same meaning, other spelling", pin, mcpTool(t, "github", mergeDoc(`{"destructiveHint":true,"title":"Merge"}`)), nil},
		{"description changed", pin, mcpTool(t, "github", `{"name":"merge_pull_request","description":"other","inputSchema":`+mergeSchema+`}`), nil},
		{"read-only now", pin, mcpTool(t, "github", mergeDoc(`{"readOnlyHint":true}`)), []string{session.DriftPolicy}},
		{"not destructive now", pin, mcpTool(t, "github", mergeDoc(`{"destructiveHint":false}`)), []string{session.DriftPolicy}},
		{"idempotent now", pin, mcpTool(t, "github", mergeDoc(`{"idempotentHint":true}`)), []string{session.DriftPolicy}},
		{"closed world now", pin, mcpTool(t, "github", mergeDoc(`{"openWorldHint":false}`)), []string{session.DriftPolicy}},
		{"schema changed", pin, other, []string{session.DriftSchema, session.DriftPolicy}},
		{"provenance changed", pin, func() catalog.Tool {
			tl := granted
			tl.Provenance = "plugin_config{github}"
			return reNormalized(t, tl)
		}(), []string{session.DriftProvenance, session.DriftPolicy}},
		{"source changed", pin, func() catalog.Tool {
			tl := granted
			tl.Source = "elsewhere"
			return reNormalized(t, tl)
		}(), []string{session.DriftPolicy}},
		{"pinned before policy digests", session.Pin{SchemaDigest: pin.SchemaDigest, Provenance: pin.Provenance}, granted, []string{session.DriftUnpinned}},
		{"pinned before policy digests, schema changed", session.Pin{SchemaDigest: pin.SchemaDigest, Provenance: pin.Provenance}, other, []string{session.DriftSchema, session.DriftUnpinned}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.pin.Drift(tc.tool))
		})
	}
}

// reNormalized passes a modified record through a store, as a catalog
// update would, so its policy digest is recomputed.
func reNormalized(t *testing.T, tl catalog.Tool) catalog.Tool {
	t.Helper()
	s, err := catalog.NewStore(tl)
	require.NoError(t, err)
	out, ok := s.Snapshot().Get(tl.ID)
	require.True(t, ok)
	return out
}

// TestPolicyDriftAfterGrant: a grant made before any change to what decides
// policy about the tool no longer holds after it; rebuild drops it and
// says why, and activating again is allowed (not already_active) and
// holds.
func TestPolicyDriftAfterGrant(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change string
		drift  []string
	}{
		{"readOnlyHint false to true", mergeDoc(`{"readOnlyHint":true}`), []string{session.DriftPolicy}},
		{"destructiveHint absent to false", mergeDoc(`{"readOnlyHint":false,"destructiveHint":false}`), []string{session.DriftPolicy}},
		{"idempotentHint false to true", mergeDoc(`{"readOnlyHint":false,"idempotentHint":true}`), []string{session.DriftPolicy}},
		{"openWorldHint absent to false", mergeDoc(`{"readOnlyHint":false,"openWorldHint":false}`), []string{session.DriftPolicy}},
		{"annotations removed", `{"name":"merge_pull_request","inputSchema":` + mergeSchema + `}`, nil},
		{"title only", mergeDoc(`{"readOnlyHint":false,"idempotentHint":false,"title":"Merge it"}`), nil},
	} {
		for name, st := range stores(t) {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				cat, err := catalog.NewStore(mcpTool(t, "github", mergeDoc(`{"readOnlyHint":false,"idempotentHint":false}`)))
				require.NoError(t, err)
				old := cat.Snapshot()
				_, err = session.Activate(ctx, st, old, "s", "merge_pull_request")
				require.NoError(t, err)

				changed := mcpTool(t, "github", tc.change)
				next, err := cat.Update(func(b *catalog.Builder) error { return b.Replace(changed) })
				require.NoError(t, err)
				set, err := st.Load(ctx, "s")
				require.NoError(t, err)
				a := set.Activated["mcp.github:merge_pull_request"]
				status, drift := a.Pin().Status(next, "mcp.github:merge_pull_request")
				assert.Equal(t, tc.drift, drift)

				_, err = session.Activate(ctx, st, next, "s", "merge_pull_request")
				if tc.drift == nil {
					assert.Equal(t, "ok", status)
					assert.ErrorIs(t, err, session.ErrAlreadyActive)
					_, rep, err := session.Rebuild(ctx, st, next, "s")
					require.NoError(t, err)
					assert.Equal(t, []string{"mcp.github:merge_pull_request"}, rep.Kept)
					return
				}
				assert.Equal(t, session.DropDrifted, status)
				require.NoError(t, err, "a drifted grant is replaced by granting again")
				set, err = st.Load(ctx, "s")
				require.NoError(t, err)
				status, drift = set.Activated["mcp.github:merge_pull_request"].Pin().Status(next, "mcp.github:merge_pull_request")
				assert.Equal(t, "ok", status)
				assert.Empty(t, drift)

				// Rebuild against the old catalog drops the new grant.
				_, rep, err := session.Rebuild(ctx, st, old, "s")
				require.NoError(t, err)
				assert.Equal(t, []session.Dropped{{Tool: "mcp.github:merge_pull_request", Reason: session.DropDrifted, Drift: tc.drift}}, rep.Dropped)
			})
		}
	}
}

// TestLegacySessionFile: a session file written before policy digests is
// still read; its pins and grants hold no policy digest, so they authorize
// nothing (the exec gate denies tool_drifted), rebuild drops them as
// policy_unpinned rather than upgrading them, and granting again fixes it.
func TestLegacySessionFile(t *testing.T) {
	ctx := context.Background()
	snap := testCatalog(t).Snapshot()
	read, _ := snap.Get("mcp.files:read")
	core, _ := snap.Get("builtin:read_file")
	p := filepath.Join(t.TempDir(), "sessions.json")
	legacy := fmt.Sprintf(`{"format":1,"sessions":{"old":{"id":"old","version":3,
  "core":{"builtin:read_file":{"schema_digest":%q,"provenance":"builtin_runtime"}},
  "activated":{"mcp.files:read":{"grant":{"session":"old","tool":"mcp.files:read","catalog_generation":0,"schema_digest":%q},"provenance":"mcp_config{files}"}}}}}`,
		core.SchemaDigest, read.SchemaDigest)
	require.NoError(t, os.WriteFile(p, []byte(legacy), 0o644))
	st := session.NewFileStore(p)

	set, err := st.Load(ctx, "old")
	require.NoError(t, err)
	a := set.Lookup("old", "mcp.files:read")
	require.NotNil(t, a.Activation)
	assert.Empty(t, a.Activation.Grant.PolicyDigest)
	assert.Empty(t, set.Activated["mcp.files:read"].Grant.CatalogDigest, "written before snapshots were named")
	assert.Equal(t, abi.SessionPin{SchemaDigest: core.SchemaDigest, Provenance: "builtin_runtime"}, *set.Lookup("old", "builtin:read_file").Core)
	status, drift := set.Activated["mcp.files:read"].Pin().Status(snap, "mcp.files:read")
	assert.Equal(t, session.DropDrifted, status)
	assert.Equal(t, []string{session.DriftUnpinned}, drift)

	// Granting again is not "already active": it replaces the grant.
	set, err = session.Activate(ctx, st, snap, "old", "files_read")
	require.NoError(t, err)
	assert.Equal(t, read.PolicyDigest, set.Activated["mcp.files:read"].Grant.PolicyDigest)

	// Rebuild drops the legacy core pin instead of upgrading it.
	set, rep, err := session.Rebuild(ctx, st, snap, "old")
	require.NoError(t, err)
	assert.Equal(t, []string{"mcp.files:read"}, rep.Kept)
	assert.Equal(t, []session.Dropped{{Tool: "builtin:read_file", Core: true, Reason: session.DropDrifted, Drift: []string{session.DriftUnpinned}}}, rep.Dropped)
	assert.Empty(t, set.Core)
}
