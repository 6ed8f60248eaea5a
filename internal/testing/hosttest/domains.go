package hosttest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/host/domain"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// The preconditions gate and the tau2 domains it checks (testdata/domains).

// PreconditionsWasm builds the preconditions gate (once per test binary)
// and returns the module's path.
func PreconditionsWasm(t testing.TB) string {
	t.Helper()
	p, err := testwasm.Go("plugins/preconditions/wasm")
	require.NoError(t, err)
	return p
}

// LoadCatalog loads the domain catalog rel, relative to the repository
// root.
func LoadCatalog(t testing.TB, rel string) *domain.Catalog {
	t.Helper()
	c, err := domain.Load(filepath.Join(root(t), rel))
	require.NoError(t, err)
	return c
}

// RetailCollections is the tau2 retail database as collections (name → id
// → document).
func RetailCollections(t testing.TB) map[string]map[string]any {
	t.Helper()
	var db map[string]map[string]any
	require.NoError(t, json.Unmarshal(ReadFile(t, "testdata/domains/retail/db.json"), &db))
	return db
}

// Docs serves colls as a domain's data source.
func Docs(colls map[string]map[string]any) datasource.DataSource {
	return datasource.NewDocuments(colls)
}

// RetailSQLCatalog is the retail catalog cut to what an SQL source answers:
// the views with an sql definition, the preconditions that read only them
// (none iterating with for_each), and no effects (an SQL source applies no
// overlay). The preconditions tests and benchmarks run it on both sources.
func RetailSQLCatalog(t testing.TB) *domain.Catalog {
	t.Helper()
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(ReadFile(t, "testdata/domains/retail/domain.yaml"), &doc))
	views, _ := doc["views"].(map[string]any)
	for name, v := range views {
		if _, ok := v.(map[string]any)["sql"]; !ok {
			delete(views, name)
		}
	}
	for _, c := range doc["capabilities"].(map[string]any) {
		cm := c.(map[string]any)
		delete(cm, "effects")
		pcs, ok := cm["preconditions"].([]any)
		if !ok {
			continue
		}
		kept := []any{}
		for _, p := range pcs {
			pm := p.(map[string]any)
			if v, ok := pm["view"].(string); (ok && views[v] == nil) || pm["for_each"] != nil {
				continue
			}
			kept = append(kept, pm)
		}
		cm["preconditions"] = kept
	}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	c, err := domain.Parse(b)
	require.NoError(t, err)
	return c
}

// PCPipelines returns NAME-dry (proposal) and NAME-exec (tool_call) for each
// domain, one preconditions stage granted query.
func PCPipelines(domains ...string) map[string]host.PipelineConfig {
	out := map[string]host.PipelineConfig{}
	for _, d := range domains {
		cfg := json.RawMessage(fmt.Sprintf(`{"domain":%q}`, d))
		stage := []host.StageConfig{{Name: "preconditions", Plugin: "preconditions", Capabilities: []string{"query"}, Config: cfg}}
		out[d+"-dry"] = host.PipelineConfig{Subject: abi.SubjectProposal, Stages: stage}
		out[d+"-exec"] = host.PipelineConfig{Subject: abi.SubjectToolCall, Stages: slices.Clone(stage)}
	}
	return out
}

// ToolCall is the native subject of a call of tool with params.
func ToolCall(t testing.TB, tool string, params any) []byte {
	t.Helper()
	p, err := json.Marshal(params)
	require.NoError(t, err)
	b, err := json.Marshal(abi.ToolCall{Tool: tool, Parameters: p})
	require.NoError(t, err)
	return b
}
