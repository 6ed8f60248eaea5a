package config

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/approval"
)

// TestApprovalsSection: approvals.ttl is the one TTL (mcp.approval_ttl a
// deprecated alias of it), and approvals.store picks the store, PostgreSQL
// by default with store.kind postgres.
func TestApprovalsSection(t *testing.T) {
	const pg = "store: {kind: postgres, dsn: 'postgres://x', node_id: n}\n"
	const file = "event_log: {path: log/e.jsonl}\n"
	for _, tc := range []struct {
		name, yaml string
		want       Approvals // Path relative to the config's directory
		err        string
	}{
		{name: "defaults", yaml: file, want: Approvals{TTL: approval.DefaultTTL, Store: ApprovalsMemory}},
		{name: "postgres by default", yaml: pg, want: Approvals{TTL: approval.DefaultTTL, Store: ApprovalsPostgres}},
		{name: "memory with postgres", yaml: pg + "approvals: {store: memory}\n", want: Approvals{TTL: approval.DefaultTTL, Store: ApprovalsMemory}},
		{name: "ttl", yaml: file + "approvals: {ttl: 90s}\n", want: Approvals{TTL: 90 * time.Second, TTLSet: true, Store: ApprovalsMemory}},
		{name: "file beside the log", yaml: file + "approvals: {store: file}\n", want: Approvals{TTL: approval.DefaultTTL, Store: ApprovalsFile, Path: "log/approvals.json"}},
		{name: "file at a path", yaml: file + "approvals: {store: file, path: a.json}\n", want: Approvals{TTL: approval.DefaultTTL, Store: ApprovalsFile, Path: "a.json"}},
		{name: "deprecated mcp.approval_ttl", yaml: file + "mcp: {approval_ttl: 2m}\n",
			want: Approvals{TTL: 2 * time.Minute, TTLSet: true, Store: ApprovalsMemory, Deprecated: []string{"mcp.approval_ttl is deprecated: it is approvals.ttl, the one approval TTL of gatehost serve and gatehost mcp"}}},
		{name: "both, the same", yaml: file + "mcp: {approval_ttl: 2m}\napprovals: {ttl: 2m}\n",
			want: Approvals{TTL: 2 * time.Minute, TTLSet: true, Store: ApprovalsMemory, Deprecated: []string{"mcp.approval_ttl is deprecated: it is approvals.ttl, the one approval TTL of gatehost serve and gatehost mcp"}}},
		{name: "both, different", yaml: file + "mcp: {approval_ttl: 2m}\napprovals: {ttl: 3m}\n", err: "mcp.approval_ttl: replaced by approvals.ttl, which sets another TTL (3m0s); remove mcp.approval_ttl"},
		{name: "ttl too short", yaml: file + "approvals: {ttl: 500ms}\n", err: "approvals.ttl: 500ms: want 1s to 24h0m0s"},
		{name: "deprecated ttl too long", yaml: file + "mcp: {approval_ttl: 25h}\n", err: "approvals.ttl: 25h0m0s: want 1s to 24h0m0s"},
		{name: "postgres without the store", yaml: file + "approvals: {store: postgres}\n", err: "approvals.store: postgres needs store.kind postgres"},
		{name: "bad store", yaml: file + "approvals: {store: redis}\n", err: `approvals.store: "redis": want memory, file or postgres`},
		{name: "path without file", yaml: pg + "approvals: {path: a.json}\n", err: "approvals.path: applies only to approvals.store file"},
		{name: "unknown key", yaml: file + "approvals: {tll: 1m}\n", err: "approvals.tll"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := write(t, "gatehost.yaml", tc.yaml)
			l, err := Load(path)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			defer l.Close()
			if tc.want.Path != "" {
				tc.want.Path = filepath.Join(filepath.Dir(path), tc.want.Path)
			}
			assert.Equal(t, tc.want, l.Approvals)
		})
	}
}
