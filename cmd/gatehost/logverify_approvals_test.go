package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/host/eventlog"
)

// TestLogVerifyShowsApprovers: log verify names who approved and who
// denied, from the verified chain; other records are not listed.
func TestLogVerifyShowsApprovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, err := eventlog.Open(path, eventlog.Options{})
	require.NoError(t, err)
	alice := &abi.Principal{Issuer: "https://id.example", Subject: "alice", Method: abi.MethodOIDC}
	b := approval.Binding{Pipeline: "gw", Tool: "mcp.fs:edit_file"}
	for _, r := range []struct {
		kind, reason string
		rec          approval.Record
	}{
		{approval.KindMinted, "", approval.Record{Approval: approval.Approval{Binding: b, ApprovedBy: alice, Approver: "oidc:https://id.example/alice", Request: "rq-00000000000000000000000000000001"}, Note: "ok"}},
		{approval.KindRefused, approval.CodeDenied, approval.Record{Approval: approval.Approval{Binding: b, ApprovedBy: alice, Request: "rq-00000000000000000000000000000002"}}},
		{approval.KindRefused, approval.CodeExpired, approval.Record{Approval: approval.Approval{Binding: b}}},
	} {
		data, err := json.Marshal(r.rec)
		require.NoError(t, err)
		_, err = l.Append(eventlog.Record{Kind: r.kind, Reason: r.reason, Pipeline: "gw", Time: time.Date(2026, 12, 3, 1, 2, 3, 0, time.UTC), Data: data})
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())

	code, out, _ := runCLI("log", "verify", "--log", path)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "approvals decided by a person (last 2):")
	assert.Contains(t, out, "mcp.fs:edit_file approved by oidc:https://id.example/alice (request rq-00000000000000000000000000000001) note \"ok\"")
	assert.Contains(t, out, "mcp.fs:edit_file denied by oidc:https://id.example/alice (request rq-00000000000000000000000000000002)")

	code, out, _ = runCLI("log", "verify", "--log", path, "--output", "json")
	require.Equal(t, 0, code, out)
	var v struct {
		Approvals []approvalSeen `json:"approvals"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Len(t, v.Approvals, 2)
	assert.Equal(t, "oidc:https://id.example/alice", v.Approvals[0].Approver)
}
