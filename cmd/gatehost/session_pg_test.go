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

// writePGSessionConfig writes a config whose store is PostgreSQL, with the
// DSN left to $GATEHOST_STORE_DSN, over the exec fixture catalog.
func writePGSessionConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gatehost.yaml")
	cfg := fmt.Sprintf("store:\n  kind: postgres\n  node_id: cli\n  op_timeout: 5s\ncatalog:\n  sources:\n    - {format: native, path: %s}\ncache_dir: %s\n",
		filepath.Join(repoRoot, "testdata/exec/catalog.json"), filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

// TestSessionCommandOnPostgres: with store.kind postgres, `gatehost
// session` works on the database's sessions — what it grants another
// replica reads — and a database that does not answer is an error, never
// an empty session list.
func TestSessionCommandOnPostgres(t *testing.T) {
	c := pgtest.Start(t)
	dsn := c.NewDatabase(t)
	// The password is ignored by the test server (trust) and must never
	// be echoed.
	dsn = strings.Replace(dsn, "postgres@", "postgres:s3cret@", 1)
	t.Setenv("GATEHOST_STORE_DSN", dsn)
	cfg := writePGSessionConfig(t)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "--session", "dev", "read_file"}, "tools=1"},
		{[]string{"activate", "--session", "dev", "files_read", "echo"}, "version=1"},
		{[]string{"revoke", "--session", "dev", "echo"}, "version=2"},
		{[]string{"show"}, "session dev  version=2"},
	} {
		code, out, errOut := runCLI(append([]string{"session", tc.args[0], "--config", cfg}, tc.args[1:]...)...)
		require.Equal(t, 0, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, out, tc.want, tc.args)
	}
	code, out, errOut := runCLI("session", "show", "--config", cfg, "--session", "dev", "--output", "json")
	require.Equal(t, 0, code, errOut)
	var view setView
	require.NoError(t, json.Unmarshal([]byte(out), &view))
	assert.Equal(t, uint64(2), view.Version)
	require.Len(t, view.Tools, 2)
	assert.Equal(t, "builtin:read_file", view.Tools[0].Tool)
	assert.Equal(t, "mcp.files:read", view.Tools[1].Tool)

	// The grants are in the database, for every replica.
	ctx := context.Background()
	db, err := postgres.Open(ctx, postgres.Options{DSN: dsn, NodeID: "replica"})
	require.NoError(t, err)
	set, err := db.Sessions().Load(ctx, "dev")
	db.Close()
	require.NoError(t, err)
	assert.Contains(t, set.Activated, "mcp.files:read")
	assert.NotContains(t, set.Activated, "ext.srv:echo_tool")

	// Refusals keep their codes and exit 1, as with the file store.
	code, _, errOut = runCLI("session", "revoke", "--config", cfg, "--session", "dev", "read_file")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "core tool cannot be revoked")

	require.NoError(t, c.Stop())
	for _, args := range [][]string{{"show"}, {"show", "--session", "dev"}, {"activate", "--session", "dev", "echo"}} {
		code, out, errOut := runCLI(append([]string{"session", args[0], "--config", cfg}, args[1:]...)...)
		assert.Equal(t, 1, code, "%v: %s", args, out)
		assert.Contains(t, errOut, "database unavailable", args)
		assert.NotContains(t, out, "no sessions", args)
		assert.NotContains(t, errOut, "s3cret", "the DSN's password is never echoed")
	}
}

// TestSessionCommandPublishedCatalog: with store.catalog: published,
// `gatehost session` resolves and pins tools against the snapshot the
// replicas decide against, not catalog.sources (which such a replica may
// not have at all); with none published it refuses.
func TestSessionCommandPublishedCatalog(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	t.Setenv("GATEHOST_STORE_DSN", dsn)
	path := filepath.Join(t.TempDir(), "gatehost.yaml")
	require.NoError(t, os.WriteFile(path, []byte("store:\n  kind: postgres\n  node_id: cli\n  catalog: published\n"), 0o644))

	code, _, errOut := runCLI("session", "activate", "--config", path, "--session", "dev", "mcp.github:get_me")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "store.catalog: published")

	code, _, errOut = runCLI("catalog", "publish", "--config", writePGConfig(t, "", true))
	require.Equal(t, 0, code, errOut)
	code, out, errOut := runCLI("session", "activate", "--config", path, "--session", "dev", "mcp.github:get_me")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "version=1")
	code, out, errOut = runCLI("session", "show", "--config", path, "--session", "dev", "--output", "json")
	require.Equal(t, 0, code, errOut)
	var view setView
	require.NoError(t, json.Unmarshal([]byte(out), &view))
	require.Len(t, view.Tools, 1)
	assert.Equal(t, "mcp.github:get_me", view.Tools[0].Tool)
	assert.Equal(t, "ok", view.Tools[0].Status)
}
