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
		{name: "defaults", yaml: file, want: Approvals{TTL: approval.DefaultTTL, Store: ApprovalsMemory, Elicitation: ElicitURL}},
		{name: "postgres by default", yaml: pg, want: Approvals{TTL: approval.DefaultTTL, Store: ApprovalsPostgres, Elicitation: ElicitURL}},
		{name: "memory with postgres", yaml: pg + "approvals: {store: memory}\n", want: Approvals{TTL: approval.DefaultTTL, Store: ApprovalsMemory, Elicitation: ElicitURL}},
		{name: "ttl", yaml: file + "approvals: {ttl: 90s}\n", want: Approvals{TTL: 90 * time.Second, TTLSet: true, Store: ApprovalsMemory, Elicitation: ElicitURL}},
		{name: "file beside the log", yaml: file + "approvals: {store: file}\n", want: Approvals{TTL: approval.DefaultTTL, Store: ApprovalsFile, Elicitation: ElicitURL, Path: "log/approvals.json"}},
		{name: "file at a path", yaml: file + "approvals: {store: file, path: a.json}\n", want: Approvals{TTL: approval.DefaultTTL, Store: ApprovalsFile, Elicitation: ElicitURL, Path: "a.json"}},
		{name: "deprecated mcp.approval_ttl", yaml: file + "mcp: {approval_ttl: 2m}\n",
			want: Approvals{TTL: 2 * time.Minute, TTLSet: true, Store: ApprovalsMemory, Elicitation: ElicitURL, Deprecated: []string{"mcp.approval_ttl is deprecated: it is approvals.ttl, the one approval TTL of gatehost serve and gatehost mcp"}}},
		{name: "both, the same", yaml: file + "mcp: {approval_ttl: 2m}\napprovals: {ttl: 2m}\n",
			want: Approvals{TTL: 2 * time.Minute, TTLSet: true, Store: ApprovalsMemory, Elicitation: ElicitURL, Deprecated: []string{"mcp.approval_ttl is deprecated: it is approvals.ttl, the one approval TTL of gatehost serve and gatehost mcp"}}},
		{name: "both, different", yaml: file + "mcp: {approval_ttl: 2m}\napprovals: {ttl: 3m}\n", err: "mcp.approval_ttl: replaced by approvals.ttl, which sets another TTL (3m0s); remove mcp.approval_ttl"},
		{name: "ttl too short", yaml: file + "approvals: {ttl: 500ms}\n", err: "approvals.ttl: 500ms: want 1s to 24h0m0s"},
		{name: "deprecated ttl too long", yaml: file + "mcp: {approval_ttl: 25h}\n", err: "approvals.ttl: 25h0m0s: want 1s to 24h0m0s"},
		{name: "postgres without the store", yaml: file + "approvals: {store: postgres}\n", err: "approvals.store: postgres needs store.kind postgres"},
		{name: "bad store", yaml: file + "approvals: {store: redis}\n", err: `approvals.store: "redis": want memory, file or postgres`},
		{name: "path without file", yaml: pg + "approvals: {path: a.json}\n", err: "approvals.path: applies only to approvals.store file"},
		{name: "unknown key", yaml: file + "approvals: {tll: 1m}\n", err: "approvals.tll"},
		{name: "approvers and form", yaml: file + "approvals: {elicitation: form, allow_self_approval: true, approvers: [{claims: {groups: ops}}, {method: token, subject: alice}]}\n",
			want: Approvals{TTL: approval.DefaultTTL, Store: ApprovalsMemory, Elicitation: ElicitForm, Rule: approval.Rule{AllowSelf: true,
				Approvers: []approval.Approver{{Claims: map[string]string{"groups": "ops"}}, {Method: "token", Subject: "alice"}}}}},
		{name: "page and webhooks", yaml: file + "approvals: {page: {url: 'https://gate.example/approvals', listen: '127.0.0.1:0', approver_token_file: t}, webhooks: [{name: ops, url: 'https://hooks.example/x', format: slack}]}\n",
			want: Approvals{TTL: approval.DefaultTTL, Store: ApprovalsMemory, Elicitation: ElicitURL,
				Page:     ApprovalPage{URL: "https://gate.example/approvals", Listen: "127.0.0.1:0", ApproverTokenFile: "t"},
				Webhooks: []Webhook{{Name: "ops", URL: "https://hooks.example/x", Format: "slack"}}}},
		{name: "an approver naming nothing", yaml: file + "approvals: {approvers: [{}]}\n", err: "approvals.approvers[0]: names no method, issuer, subject or claim"},
		{name: "an approver's bad method", yaml: file + "approvals: {approvers: [{method: password}]}\n", err: `approvals.approvers[0]: method "password"`},
		{name: "bad elicitation", yaml: file + "approvals: {elicitation: ask}\n", err: `approvals.elicitation: "ask": want url, form or none`},
		{name: "page url with a query", yaml: file + "approvals: {page: {url: 'https://x/?a=1'}}\n", err: "approvals.page.url"},
		{name: "oidc without a client", yaml: file + "approvals: {page: {oidc: {issuer: 'https://id.example'}}}\n", err: "approvals.page.oidc.client_id: required"},
		{name: "json webhook without a secret", yaml: file + "approvals: {webhooks: [{name: a, url: 'https://h/x', format: json}]}\n", err: "approvals.webhooks[0]: format json needs secret_file or secret_env"},
		{name: "webhook format", yaml: file + "approvals: {webhooks: [{name: a, url: 'https://h/x', format: teams}]}\n", err: `approvals.webhooks[0].format: "teams"`},
		{name: "webhook twice", yaml: file + "approvals: {webhooks: [{name: a, url: 'https://h/x', format: slack}, {name: a, url: 'https://h/y', format: slack}]}\n", err: `approvals.webhooks[1].name: "a" twice`},
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
			if tc.want.Page.ApproverTokenFile != "" {
				tc.want.Page.ApproverTokenFile = filepath.Join(filepath.Dir(path), tc.want.Page.ApproverTokenFile)
			}
			assert.Equal(t, tc.want, l.Approvals)
		})
	}
}
