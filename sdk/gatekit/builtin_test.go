package gatekit_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/host/domain"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/sdk/gatekit"
)

// The built-in gates pass the conformance kit, with their own data
// cases where they have them.

// testBudget only bounds a gate that hangs: these tests check conformance,
// not speed, and run under -race on machines as loaded as CI's. How fast
// each gate is lives in the benchmarks (docs/PERFORMANCE.md), and the
// default budget is checked on the built modules by make plugin-kit; each
// gate's real figure is in the log.
var testBudget = gatekit.Budget{Time: time.Minute, OversizedTime: 5 * time.Minute}

// oversized is the host's full subject cap.
const oversized = host.MaxSubjectBytes

func root(t *testing.T) string {
	t.Helper()
	r, err := testwasm.Root()
	require.NoError(t, err)
	return r
}

func build(t *testing.T, pkg string) string {
	t.Helper()
	p, err := testwasm.Go(pkg)
	require.NoError(t, err)
	return p
}

func githubCatalog(t *testing.T) *catalog.Store {
	t.Helper()
	tools, err := catalog.Load(filepath.Join(root(t), "testdata/catalogs/github-mcp-server"), catalog.ImportOptions{Format: catalog.FormatMCP, Server: "github"})
	require.NoError(t, err)
	s, err := catalog.NewStore(tools...)
	require.NoError(t, err)
	return s
}

func TestBuiltinStaticVerify(t *testing.T) {
	t.Parallel()
	cases, err := gatekit.LoadCases(filepath.Join(root(t), "testdata/static-verify/cases"))
	require.NoError(t, err)
	r := gatekit.Run(t, build(t, "plugins/static-verify/wasm"), gatekit.Options{
		Budget: testBudget, OversizedBytes: oversized, Cases: cases,
		Host: host.Config{Catalog: githubCatalog(t), CacheDir: testwasm.CacheDir()},
	})
	require.Greater(t, len(r.Results), len(cases))
}

func TestBuiltinExec(t *testing.T) {
	t.Parallel()
	gatekit.Run(t, build(t, "plugins/exec/wasm"), gatekit.Options{
		Budget: testBudget, OversizedBytes: oversized,
		Subjects: map[abi.SubjectKind]json.RawMessage{
			abi.SubjectToolCall: json.RawMessage(`{"id":"c1","tool":"create_issue","parameters":{"owner":"o","repo":"r","title":"t"}}`),
		},
		Host: host.Config{Catalog: githubCatalog(t), CacheDir: testwasm.CacheDir()},
	})
}

func TestBuiltinMerge(t *testing.T) {
	t.Parallel()
	gatekit.Run(t, build(t, "plugins/merge/wasm"), gatekit.Options{
		Budget: testBudget, OversizedBytes: oversized,
		Host: host.Config{CacheDir: testwasm.CacheDir()},
	})
}

func TestBuiltinPreconditions(t *testing.T) {
	t.Parallel()
	dir := root(t)
	cat, err := domain.Load(filepath.Join(dir, "testdata/domains/retail/domain.yaml"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "testdata/domains/retail/db.json"))
	require.NoError(t, err)
	var db map[string]map[string]any
	require.NoError(t, json.Unmarshal(b, &db))
	example, err := os.ReadFile(filepath.Join(dir, "testdata/domains/examples/retail-cancel-processed.json"))
	require.NoError(t, err)
	gatekit.Run(t, build(t, "plugins/preconditions/wasm"), gatekit.Options{
		Budget: testBudget, OversizedBytes: oversized,
		Config: json.RawMessage(`{"domain":"retail"}`),
		Cases: []gatekit.Case{{Name: "retail-cancel-processed", Note: "cancelling a processed order is denied",
			Subject: example, WantVerdict: abi.Rejected}},
		Host: host.Config{CacheDir: testwasm.CacheDir(),
			Domains: map[string]host.Domain{"retail": {Catalog: cat, Source: datasource.NewDocuments(db)}}},
	})
}

func TestMain(m *testing.M) { testwasm.Main(m, nil) }
