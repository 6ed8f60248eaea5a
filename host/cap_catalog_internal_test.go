package host

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
)

func TestCatalogGetKnownSchemaDigest(t *testing.T) {
	tools, err := catalog.Load(filepath.Join("..", "testdata/catalogs/github-mcp-server"), catalog.ImportOptions{Format: catalog.FormatMCP, Server: "github"})
	require.NoError(t, err)
	store, err := catalog.NewStore(tools...)
	require.NoError(t, err)
	rc := &runContext{snap: store.Snapshot()}
	tool, ok := rc.snap.Get("create_branch")
	require.True(t, ok)
	get := func(req string) abi.CatalogGetAnswer {
		res, err := catalogCapability{}.call(context.Background(), rc, abi.OpCatalogGet, []byte(req))
		require.NoError(t, err)
		b, err := json.Marshal(res)
		require.NoError(t, err)
		var a abi.CatalogGetAnswer
		require.NoError(t, json.Unmarshal(b, &a))
		return a
	}
	for _, tc := range []struct {
		name, req   string
		wantOmitted bool
	}{
		{"no digest", `{"name":"create_branch"}`, false},
		{"matching digest", `{"name":"create_branch","known_schema_digest":"` + tool.SchemaDigest + `"}`, true},
		{"other digest", `{"name":"create_branch","known_schema_digest":"0000000000000000000000000000000000000000000000000000000000000000"}`, false},
		{"empty digest", `{"name":"create_branch","known_schema_digest":""}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := get(tc.req)
			require.True(t, a.Found)
			assert.Equal(t, tc.wantOmitted, a.SchemaOmitted)
			assert.Equal(t, tool.SchemaDigest, a.Tool.SchemaDigest)
			if tc.wantOmitted {
				assert.Empty(t, a.Tool.InputSchema)
			} else {
				assert.NotEmpty(t, a.Tool.InputSchema)
			}
		})
	}
}
