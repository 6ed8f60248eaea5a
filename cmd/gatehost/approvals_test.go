package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/compose"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/subject"
	"github.com/gatehost/gatehost/internal/testing/edgecase"
	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/mcpgateway"
	"github.com/gatehost/gatehost/server"
	"github.com/gatehost/gatehost/store/postgres"
)

const approverToken = "approver-token-0123456789abcdef"

// mergeCall is an MCP tools/call's params merging PR 42.
const mergeCall = `{"name":"merge_pull_request","arguments":{"owner":"octo-org","repo":"widgets","pullNumber":42,"merge_method":"squash"}}`

// writeApprovalsConfig writes a config whose pipeline exec asks a
// person's confirmation of every non-idempotent call, on the GitHub
// catalog; store is the store: section ("" for files) and approvals the
// approvals: section.
func writeApprovalsConfig(t *testing.T, dir, store, approvals string) string {
	t.Helper()
	execWasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	files := "event_log: {path: events.jsonl}\nsessions: {path: sessions.json}\n"
	if store != "" {
		files = store
	}
	cfg := fmt.Sprintf(`catalog:
  sources:
    - {format: mcp, path: %s, server: github}
%s
cache_dir: %s
plugins:
  exec: {path: %s}
pipelines:
  exec:
    subject: tool_call
    stages: [{plugin: exec, timeout: 60s, capabilities: [catalog, session], config: {confirm_effects: [non_idempotent]}}]
approvals: %s
`, filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server"), files, testwasm.CacheDir(), execWasm, approvals)
	path := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	return path
}

// startServer runs gatehost serve's server on cfg with the approver
// token, and returns its HTTP handler's test server.
func startServer(t *testing.T, cfg string) *httptest.Server {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "approvers")
	require.NoError(t, os.WriteFile(tokens, []byte(approverToken+" name=alice\n"), 0o600))
	t.Setenv(server.TokenEnv, "")
	t.Setenv(server.ApproverTokenEnv, "")
	s, err := server.New(server.Options{ConfigPath: cfg, ApproverTokenFile: tokens}, nil)
	require.NoError(t, err)
	require.NoError(t, s.Start(context.Background()))
	t.Cleanup(func() { _ = s.Close() })
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// mint approves mergeCall for session dev through POST /v1/approvals: the
// request the gateway g opens for it, on the store they share, as its
// agent's call would.
func mint(t *testing.T, ts *httptest.Server, g *mcpgateway.Gateway) approval.Approval {
	t.Helper()
	call, err := approval.Bind(g.Host(), "exec", "dev", nil, []byte(mergeCall), subject.FormatMCP)
	require.NoError(t, err)
	_, _, err = g.Desk().Open(context.Background(), approval.Request{Binding: call.Binding, Arguments: call.Arguments, Front: "mcp"})
	require.NoError(t, err)
	req, err := http.NewRequest("POST", ts.URL+"/v1/approvals?pipeline=exec&session=dev&format=mcp", strings.NewReader(mergeCall))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+approverToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var ap approval.Approval
	require.Equal(t, 201, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ap))
	return ap
}

// openGatewayOn builds the MCP gateway of cfg as gatehost mcp does: through
// the composition root, with the config's approval TTL and store.
func openGatewayOn(t *testing.T, cfg string) *mcpgateway.Gateway {
	t.Helper()
	ctx := context.Background()
	l, err := config.Load(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	rt, err := compose.Open(ctx, l, compose.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	st, err := compose.OpenApprovals(l, rt.Store)
	require.NoError(t, err)
	g, err := mcpgateway.New(ctx, rt.Host(), mcpgateway.Options{Pipeline: "exec", ApprovalTTL: l.Approvals.TTL, ApprovalStore: st,
		Upstreams: []mcpgateway.Upstream{{Name: "github", Command: []string{"true"}}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// present checks mergeCall through the gateway's host with the approval
// id as its confirmation, as the gateway presents one.
func present(t *testing.T, g *mcpgateway.Gateway, id string) *host.Decision {
	t.Helper()
	d, err := g.Host().Check(context.Background(), "exec", []byte(mergeCall),
		host.RunOptions{Format: subject.FormatMCP, Session: "dev", ConfirmationToken: id})
	require.NoError(t, err)
	return d
}

func codes(d *host.Decision) []string {
	var out []string
	for _, f := range d.Findings {
		out = append(out, f.Code)
	}
	return out
}

// TestApprovalServeToMCP: an approval a person mints through gatehost
// serve's HTTP API confirms the call once through gatehost mcp on the same
// machine (approvals.store file); a replay is refused as used.
func TestApprovalServeToMCP(t *testing.T) {
	dir := t.TempDir()
	cfg := writeApprovalsConfig(t, dir, "", "{store: file}")
	edgecase.Activate(t, cfg, "dev", "merge_pull_request")
	ts := startServer(t, cfg)
	g := openGatewayOn(t, cfg)

	assert.Equal(t, []string{abi.CodeConfirmationRequired}, codes(present(t, g, "")), "needs a confirmation")
	ap := mint(t, ts, g)
	assert.Equal(t, "token:gatehost-approvers/alice", ap.Approver)
	d := present(t, g, ap.ID)
	assert.Equal(t, abi.Accepted, d.Verdict, "%v", codes(d))
	d = present(t, g, ap.ID)
	assert.Equal(t, abi.Rejected, d.Verdict)
	assert.Equal(t, []string{abi.CodeConfirmationRequired}, codes(d))
	_, err := os.Stat(filepath.Join(dir, config.DefaultApprovalsFile))
	require.NoError(t, err, "the approvals file is beside the event log")
}

// TestApprovalAcrossReplicas: with store.kind postgres the approvals are
// the fleet's by default: minted through replica a's HTTP API, the call is
// confirmed once through replica b; a replay on b, or back on a, is
// refused as used.
func TestApprovalAcrossReplicas(t *testing.T) {
	t.Setenv("GATEHOST_STORE_DSN", pgtest.Shared(t).NewDatabase(t))
	replica := func(node string) string {
		return writeApprovalsConfig(t, t.TempDir(), "store: {kind: postgres, node_id: "+node+", op_timeout: 5s}", "{}")
	}
	cfgA, cfgB := replica("a"), replica("b")
	code, _, errOut := runCLI("session", "activate", "--config", cfgA, "--session", "dev", "merge_pull_request")
	require.Equal(t, 0, code, errOut)
	tsA := startServer(t, cfgA)
	gA, gB := openGatewayOn(t, cfgA), openGatewayOn(t, cfgB)

	ap := mint(t, tsA, gB)
	d := present(t, gB, ap.ID)
	assert.Equal(t, abi.Accepted, d.Verdict, "%v", codes(d))
	for _, g := range []*mcpgateway.Gateway{gB, gA} {
		d = present(t, g, ap.ID)
		assert.Equal(t, abi.Rejected, d.Verdict)
		assert.Equal(t, []string{abi.CodeConfirmationRequired}, codes(d))
	}
	// The refusals are in the fleet's log with their code.
	db, err := postgres.Open(context.Background(), postgres.Options{DSN: os.Getenv("GATEHOST_STORE_DSN"), NodeID: "test"})
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.Pool().QueryRow(context.Background(),
		"SELECT count(*) FROM gatehost_events WHERE kind = $1 AND line LIKE $2", approval.KindRefused, `%"reason":"`+approval.CodeUsed+`"%`).Scan(&n))
	assert.Equal(t, 2, n)
}
