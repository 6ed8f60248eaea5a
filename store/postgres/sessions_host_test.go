package postgres_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/plugins/exec"
	"github.com/gatehost/gatehost/store/postgres"
)

// TestSessionExecGateOnPostgres runs the exec gate in a host whose sessions
// are in PostgreSQL: a grant authorizes, another replica's revocation
// refuses the very next call, and with the database down the decision is
// inconclusive (session_unavailable) — never accepted from a stale or
// empty answer — and the store's error (the database's user, name, host
// and port) is in the host's log with the run id, not in the decision or
// its event log record.
func TestSessionExecGateOnPostgres(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Start(t)
	dsn := c.NewDatabase(t)
	db, err := postgres.Open(ctx, postgres.Options{DSN: dsn, NodeID: "gate", OpTimeout: 5 * time.Second})
	require.NoError(t, err)
	defer db.Close()
	other := sessReplica(t, dsn, "operator")

	wasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	t.Cleanup(testwasm.Cleanup)
	cat := sessCatalog(t)
	logPath := filepath.Join(t.TempDir(), "events.jsonl")
	elog, err := eventlog.Open(logPath, eventlog.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = elog.Close() })
	var logBuf syncBuffer
	h, err := host.New(ctx, host.Config{
		Logger:   slog.New(slog.NewJSONHandler(&logBuf, nil)),
		EventLog: elog,
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
	var last *host.Decision
	check := func() host.StageResult {
		t.Helper()
		d, err := h.Check(ctx, "exec", call, host.RunOptions{Session: "agent"})
		require.NoError(t, err)
		require.Len(t, d.Stages, 1)
		assert.Equal(t, d.Verdict, d.Stages[0].Verdict)
		last = d
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

	// The cause, which names the database once the pool reconnects, is
	// the operator's.
	res = check()
	assert.Equal(t, "session_unavailable", res.Reason)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	parts := []string{u.User.Username(), strings.TrimPrefix(u.Path, "/"), u.Hostname(), u.Port()}
	decision, err := json.Marshal(last)
	require.NoError(t, err)
	records, err := os.ReadFile(logPath)
	require.NoError(t, err)
	var record string
	for line := range strings.Lines(string(records)) {
		if strings.Contains(line, last.RunID) {
			record += line
		}
	}
	require.NotEmpty(t, record)
	for _, p := range parts {
		assert.NotContains(t, string(decision), p, "the decision")
		assert.NotContains(t, record, p, "the event log")
	}
	assert.Contains(t, string(decision), "session store unavailable")
	var logLine string
	for line := range strings.Lines(logBuf.String()) {
		if strings.Contains(line, "session store unavailable") && strings.Contains(line, last.RunID) {
			logLine = line
		}
	}
	require.NotEmpty(t, logLine, "the host's log has the failure with the run id:\n%s", logBuf.String())
	for _, p := range parts {
		assert.Contains(t, logLine, p, "the host's log has the cause")
	}
}
