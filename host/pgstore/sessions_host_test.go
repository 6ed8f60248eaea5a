package pgstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/pgstore"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/pgtest"
	"github.com/gatehost/gatehost/internal/testwasm"
	"github.com/gatehost/gatehost/plugins/exec"
)

// TestSessionExecGateOnPostgres runs the exec gate in a host whose sessions
// are in PostgreSQL: a grant authorizes, another replica's revocation
// refuses the very next call, and with the database down the decision is
// inconclusive (session_unavailable) — never accepted from a stale or
// empty answer.
func TestSessionExecGateOnPostgres(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Start(t)
	dsn := c.NewDatabase(t)
	db, err := pgstore.Open(ctx, pgstore.Options{DSN: dsn, NodeID: "gate", OpTimeout: 5 * time.Second})
	require.NoError(t, err)
	defer db.Close()
	other := sessReplica(t, dsn, "operator")

	wasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	t.Cleanup(testwasm.Cleanup)
	cat := sessCatalog(t)
	h, err := host.New(ctx, host.Config{
		Plugins:  map[string]host.PluginConfig{"exec": {Path: wasm}},
		Catalog:  cat,
		Sessions: db.Sessions(),
		CacheDir: testwasm.CacheDir(),
		Pipelines: map[string]host.PipelineConfig{"exec": {Subject: abi.SubjectToolCall, Stages: []host.StageConfig{{
			Plugin: "exec", Capabilities: []string{"catalog", "session"}, Timeout: time.Minute,
		}}}},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close(context.Background()) })

	call, _ := json.Marshal(abi.ToolCall{Tool: "files_read", Parameters: json.RawMessage(`{"path":"README.md"}`)})
	check := func() host.StageResult {
		t.Helper()
		d, err := h.Check(ctx, "exec", call, host.RunOptions{Session: "agent"})
		require.NoError(t, err)
		require.Len(t, d.Stages, 1)
		assert.Equal(t, d.Verdict, d.Stages[0].Verdict)
		return d.Stages[0]
	}

	_, err = session.ActivateMany(ctx, other.Sessions(), cat.Snapshot(), "agent", []string{"files_read", "echo"})
	require.NoError(t, err)
	res := check()
	require.Equal(t, abi.Accepted, res.Verdict, "%+v", res.Findings)

	_, err = session.Revoke(ctx, other.Sessions(), cat.Snapshot(), "agent", "files_read")
	require.NoError(t, err)
	res = check()
	require.Equal(t, abi.Rejected, res.Verdict, "another replica's revocation holds at once")
	require.Len(t, res.Findings, 1)
	assert.Equal(t, exec.CodeNotActivated, res.Findings[0].Code)

	call, _ = json.Marshal(abi.ToolCall{Tool: "echo", Parameters: json.RawMessage(`{"text":"hi"}`)})
	require.Equal(t, abi.Accepted, check().Verdict)
	require.NoError(t, c.Stop())
	res = check()
	assert.Equal(t, abi.Inconclusive, res.Verdict, "a session store that cannot answer authorizes nothing")
	assert.Equal(t, "session_unavailable", res.Reason)
}
