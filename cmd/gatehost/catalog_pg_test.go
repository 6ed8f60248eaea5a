package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/store/postgres"
)

// writePGConfig writes a config whose store is PostgreSQL at dsn ("" to
// leave store.dsn unset) and whose catalog is the GitHub MCP server's
// tools, or none without sources.
func writePGConfig(t *testing.T, dsn string, sources bool) string {
	t.Helper()
	cfg := "store:\n  kind: postgres\n  node_id: publisher\n"
	if dsn != "" {
		cfg += fmt.Sprintf("  dsn: %q\n", dsn)
	}
	if sources {
		cfg += fmt.Sprintf("catalog:\n  sources:\n    - format: mcp\n      path: %s\n      server: github\n",
			filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server"))
	}
	cfg += fmt.Sprintf("cache_dir: %s\n", filepath.Join(t.TempDir(), "cache"))
	path := filepath.Join(t.TempDir(), "gatehost.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

type showJSON struct {
	Generation uint64            `json:"generation"`
	Digest     string            `json:"digest"`
	Tools      []json.RawMessage `json:"tools"`
}

func showDigest(t *testing.T, cfg string) string {
	t.Helper()
	code, out, errs := runCLI("catalog", "show", "--config", cfg, "--output", "json")
	require.Equal(t, 0, code, errs)
	var v showJSON
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Len(t, v.Digest, 64)
	return v.Digest
}

func TestCatalogShowDigest(t *testing.T) {
	cfg := writeConfig(t, "")
	digest := showDigest(t, cfg)
	code, out, errs := runCLI("catalog", "show", "--config", cfg)
	require.Equal(t, 0, code, errs)
	first, _, _ := strings.Cut(out, "\n")
	assert.Equal(t, "catalog generation 0: 117 tools, digest "+digest, first)
}

func TestCatalogPublish(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	cfg := writePGConfig(t, dsn, true)
	digest := showDigest(t, cfg)

	code, out, errs := runCLI("catalog", "publish", "--config", cfg, "--output", "json")
	require.Equal(t, 0, code, errs)
	var got struct {
		Digest string `json:"digest"`
		Tools  int    `json:"tools"`
		Node   string `json:"node"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, digest, got.Digest, "published under the digest catalog show names")
	assert.Equal(t, 117, got.Tools)
	assert.Equal(t, "publisher", got.Node)

	// A replica pulls the same catalog.
	ctx := context.Background()
	db, err := postgres.Open(ctx, postgres.Options{DSN: dsn, NodeID: "replica"})
	require.NoError(t, err)
	defer db.Close()
	pulled, tools, err := db.PublishedCatalog(ctx)
	require.NoError(t, err)
	assert.Equal(t, digest, pulled)
	assert.Len(t, tools, 117)

	// Again, readable, with the DSN from the environment: nothing changes.
	t.Setenv("GATEHOST_STORE_DSN", dsn)
	code, out, errs = runCLI("catalog", "publish", "--config", writePGConfig(t, "", true))
	require.Equal(t, 0, code, errs)
	assert.Equal(t, fmt.Sprintf("published catalog %s: 117 tools (node publisher)\n", digest), out)
	var pubs int
	require.NoError(t, db.Pool().QueryRow(ctx, "SELECT count(*) FROM gatehost_catalog_publications").Scan(&pubs))
	assert.Equal(t, 1, pubs, "republishing the head records nothing")
}

func TestCatalogPublishRefusals(t *testing.T) {
	pgtest.Skip(t)
	unreachable := "postgres://user:s3cret@127.0.0.1:1/x?connect_timeout=2"
	tests := []struct {
		name     string
		cfg      string
		args     []string
		want     int
		contains string
	}{
		{"file store", writeConfig(t, ""), nil, exitUsage, "needs store.kind postgres"},
		{"no tools", writePGConfig(t, unreachable, false), nil, exitUsage, "has no tools"},
		{"extra argument", writePGConfig(t, unreachable, true), []string{"PATH"}, exitUsage, ""},
		{"store unreachable", writePGConfig(t, unreachable, true), nil, 1, "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"catalog", "publish", "--config", tt.cfg}, tt.args...)...)
			assert.Equal(t, tt.want, code, errs)
			assert.Empty(t, out)
			assert.Contains(t, errs, tt.contains)
			assert.NotContains(t, errs, "s3cret", "the DSN is never echoed")
		})
	}
}
