package policy_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/policy"
)

// catalogTools loads a catalog of the repository as the CLI does.
func catalogTools(t testing.TB, path, server string) ([]abi.Tool, policy.Lookup) {
	t.Helper()
	list, err := catalog.Load(filepath.Join("..", path), catalog.ImportOptions{Format: catalog.FormatMCP, Server: server})
	require.NoError(t, err)
	store, err := catalog.NewStore(list...)
	require.NoError(t, err)
	snap := store.Snapshot()
	var tools []abi.Tool
	for _, x := range snap.List() {
		tools = append(tools, x.ABI())
	}
	return tools, func(name string) (abi.Tool, bool) {
		x, ok := snap.Get(name)
		return x.ABI(), ok
	}
}

func fsTools(t testing.TB) ([]abi.Tool, policy.Lookup) {
	return catalogTools(t, "examples/policies/server-filesystem.tools.json", "fs")
}

func githubTools(t testing.TB) ([]abi.Tool, policy.Lookup) {
	return catalogTools(t, "testdata/catalogs/github-mcp-server", "github")
}

func mustSet(t testing.TB, text string) *policy.Set {
	t.Helper()
	set, err := policy.Parse([]policy.Source{{File: "test.cedar", Text: text}})
	require.NoError(t, err)
	return set
}

func mustTool(t testing.TB, lookup policy.Lookup, name string) abi.Tool {
	t.Helper()
	tool, ok := lookup(name)
	require.True(t, ok, name)
	return tool
}

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

var githubClaims = policy.Options{Claims: map[string]policy.ClaimType{"roles": policy.ClaimStringSet}}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

func errorAs[T error](err error, target *T) bool { return errors.As(err, target) }
