package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadOnlyRoleVerifiesAndReads: log verify, log export and session
// show work through a role granted only SELECT (an auditor's, or a hot
// standby's): opening the store for them writes nothing.
func TestReadOnlyRoleVerifiesAndReads(t *testing.T) {
	f := newStoreFixture(t, "node")
	dsn := f.db.Pool().Config().ConnString()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	role := "auditor_" + strings.TrimPrefix(u.Path, "/")
	f.exec(t, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD 'audit'", role))
	f.exec(t, "GRANT SELECT ON ALL TABLES IN SCHEMA public TO "+role)
	t.Cleanup(func() {
		f.exec(t, "DROP OWNED BY "+role)
		f.exec(t, "DROP ROLE "+role)
	})

	// A session, granted through the writing role.
	t.Setenv("GATEHOST_STORE_DSN", dsn)
	cfg := writePGSessionConfig(t)
	code, _, errOut := runCLI("session", "create", "--config", cfg, "--session", "dev", "read_file")
	require.Equal(t, 0, code, errOut)

	u.User = url.UserPassword(role, "audit")
	t.Setenv("GATEHOST_STORE_DSN", u.String())
	code, out, errOut := runCLI("log", "verify", "--config", cfg, "--output", "json")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	var rep struct {
		OK     bool        `json:"ok"`
		Chains []chainJSON `json:"chains"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.True(t, rep.OK)
	assert.Len(t, rep.Chains, 2)

	path := filepath.Join(t.TempDir(), "node-b.jsonl")
	code, out, errOut = runCLI("log", "export", "--config", cfg, "--chain", "node-b", "--out", path)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	code, out, errOut = runCLI("log", "verify", "--log", path)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "5 records")

	code, out, errOut = runCLI("session", "show", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "session dev")
	code, out, errOut = runCLI("session", "show", "--config", cfg, "--session", "dev")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "read_file")

	// Writing still needs a role that may write.
	code, _, errOut = runCLI("session", "activate", "--config", cfg, "--session", "dev", "echo")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "permission denied")

	var nodes int
	require.NoError(t, f.db.Pool().QueryRow(t.Context(), "SELECT count(*) FROM gatehost_nodes WHERE node_id = 'cli'").Scan(&nodes))
	assert.Equal(t, 1, nodes, "only the writing command registered the node")
}
