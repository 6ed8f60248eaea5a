package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/store/postgres"
)

// TestCheckOnPostgresStore: with store.kind postgres, `gatehost check`
// records its decision in the store's event log (the replica's chain), as
// serve does; a database that does not answer is an error (exit 2), never
// a decision without its record.
func TestCheckOnPostgresStore(t *testing.T) {
	c := pgtest.Start(t)
	dsn := c.NewDatabase(t)
	// The test server ignores the password (trust); it must never be echoed.
	dsn = strings.Replace(dsn, "postgres@", "postgres:s3cret@", 1)
	t.Setenv("GATEHOST_STORE_DSN", dsn)
	cfg := writeConfig(t, "")
	src, err := os.ReadFile(cfg)
	require.NoError(t, err)
	pg := strings.Replace(string(src), "event_log:\n  path: events.jsonl\n",
		"store:\n  kind: postgres\n  node_id: cli\n  op_timeout: 5s\n", 1)
	require.NotEqual(t, string(src), pg)
	require.NoError(t, os.WriteFile(cfg, []byte(pg), 0o644))

	code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", "admission", proposal("read-then-write.json"))
	require.Equal(t, exitAccepted, code, "stdout:\n%s\nstderr:\n%s", out, errOut)

	ctx := context.Background()
	db, err := postgres.Open(ctx, postgres.Options{DSN: dsn, NodeID: "verifier"})
	require.NoError(t, err)
	reports, err := db.VerifyChains(ctx, postgres.VerifyChainsOptions{Chains: []string{"cli"}})
	db.Close()
	require.NoError(t, err)
	require.Len(t, reports, 1)
	require.NoError(t, reports[0].Err)
	assert.Positive(t, reports[0].Records, "the decision is on the replica's chain")

	require.NoError(t, c.Stop())
	code, out, errOut = runCLI("check", "--config", cfg, "--pipeline", "admission", proposal("read-then-write.json"))
	assert.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.NotContains(t, out, "ACCEPTED")
	assert.Contains(t, errOut, "store")
	assert.NotContains(t, out+errOut, "s3cret")
}
