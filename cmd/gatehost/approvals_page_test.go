package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/testing/pageclient"
)

// TestApprovalsPageStandalone: gatehost approvals page serves the page of
// a shared approvals file; a request a front end opened is approved there,
// the front end's desk sees it, and the decision is in the event log.
func TestApprovalsPageStandalone(t *testing.T) {
	dir := t.TempDir()
	const approverTok = "standalone-approver-0123456789abcdef"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "approvers"), []byte(approverTok+" name=alice\n"), 0o600))
	cfg := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`
event_log: {path: events.jsonl}
approvals:
  store: file
  page: {approver_token_file: approvers}
`), 0o644))
	t.Setenv("GATEHOST_APPROVER_TOKENS", "")

	// A front end's desk on the same file opens a request.
	st, err := approval.OpenFile(filepath.Join(dir, "approvals.json"))
	require.NoError(t, err)
	apps, err := approval.New(approval.Options{Store: st})
	require.NoError(t, err)
	desk, err := approval.NewDesk(approval.DeskOptions{Approvals: apps})
	require.NoError(t, err)
	sum := fmt.Sprintf("%064x", 7)
	caller := &abi.Principal{Method: abi.MethodToken, Issuer: "gatehost-tokens", Subject: "agent"}
	r, _, err := desk.Open(context.Background(), approval.Request{Binding: approval.Binding{Pipeline: "gw", Tool: "mcp.fs:write_file", SubjectSHA256: sum,
		CallerKey: approval.CallerOf(caller)}, Caller: caller, Arguments: json.RawMessage(`{"path":"/x"}`)})
	require.NoError(t, err)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"approvals", "page", "--config", cfg, "--listen", addr}, nil, os.Stdout, os.Stderr)
	}()
	t.Cleanup(func() {
		cancel()
		assert.Equal(t, 0, <-done)
	})
	base := "http://" + addr + "/approvals"
	// Bounded: a page that never answers fails the test.
	for deadline := time.Now().Add(time.Minute); ; {
		resp, err := http.Get(base + "/signin")
		if err == nil {
			resp.Body.Close()
			break
		}
		require.True(t, time.Now().Before(deadline), "the page never answered: %v", err)
		time.Sleep(20 * time.Millisecond)
	}
	page, err := pageclient.SignIn(nil, base, approverTok)
	require.NoError(t, err)
	status, body, err := page.Decide(r.ID, true, "fine")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, body)

	got, err := desk.Get(context.Background(), r.ID)
	require.NoError(t, err)
	assert.Equal(t, approval.StateApproved, got.State, "the front end's desk sees the decision")
	assert.Equal(t, "alice", got.DecidedBy.Subject)
	rep, err := eventlog.Verify(filepath.Join(dir, "events.jsonl"), eventlog.VerifyOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 1, rep.Records, "the approval_minted record")
}

func TestApprovalsPageNeedsASharedStore(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("event_log: {path: events.jsonl}\n"), 0o644))
	code, _, stderr := runCLI("approvals", "page", "--config", cfg)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "approvals.store: a page apart from the front ends needs a store they share")
}
