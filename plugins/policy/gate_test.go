package policy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	gate "github.com/gatehost/gatehost/plugins/policy"
	cedarpolicy "github.com/gatehost/gatehost/policy"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

var (
	writeFile = abi.Tool{ID: "mcp.fs:write_file", Name: "write_file", SchemaDigest: "d1", Effect: abi.EffectIdempotentWrite,
		Hints:       &abi.ToolHints{Destructive: true, Idempotent: true},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)}
	readFile = abi.Tool{ID: "mcp.fs:read_file", Name: "read_file", SchemaDigest: "d2", Effect: abi.EffectReadOnly,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}
)

// exampleConfig is the stage config of examples/policies/filesystem.cedar.
func exampleConfig(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", "examples", "policies", "filesystem.cedar"))
	require.NoError(t, err)
	b, err := json.Marshal(gate.Config{Policies: []gatePolicy{{File: "filesystem.cedar", Text: string(text)}}})
	require.NoError(t, err)
	return string(b)
}

type gatePolicy = cedarpolicy.Source

func evaluate(t *testing.T, h *gatetest.Host, config, tool, params string, p *abi.Principal) abi.Response {
	t.Helper()
	subj, _ := json.Marshal(abi.ToolCall{Tool: tool, Parameters: json.RawMessage(params)})
	req := abi.Request{SubjectKind: abi.SubjectToolCall, Subject: subj, Config: json.RawMessage(config),
		Context: abi.Context{CatalogGeneration: 4, Now: "2026-01-01T00:00:00Z", Principal: p}}
	resp, err := gatetest.Evaluate(context.Background(), gate.Gate, req, h)
	require.NoError(t, err)
	return resp
}

func TestGate(t *testing.T) {
	cfg := exampleConfig(t)
	h := gatetest.NewHost(writeFile, readFile)
	for _, tc := range []struct {
		name, tool, params string
		verdict            abi.Verdict
		code               string
		policies           []any
	}{
		{"a read", "read_file", `{"path":"/srv/share/x"}`, abi.Accepted, "", []any{"fs-read"}},
		{"a write under public", "write_file", `{"path":"/srv/share/public/a","content":"hello"}`, abi.Accepted, "", []any{"fs-write-under-public"}},
		{"a write out of public", "write_file", `{"path":"/srv/share/public/../a","content":"hello"}`, abi.Rejected, "policy_no_permit", nil},
		{"a private key", "write_file", `{"path":"/srv/share/public/k","content":"-----BEGIN EC PRIVATE KEY-----"}`, abi.Rejected, "policy_forbid", []any{"fs-no-private-keys"}},
		{"an unknown tool", "delete_file", `{}`, abi.Rejected, "unknown_tool", nil},
		{"an argument of the wrong type", "write_file", `{"path":7,"content":"x"}`, abi.Inconclusive, "argument_unrepresentable", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := evaluate(t, h, cfg, tc.tool, tc.params, nil)
			assert.Equal(t, tc.verdict, r.Verdict, "%+v", r)
			if tc.code != "" {
				require.NotEmpty(t, r.Findings)
				assert.Equal(t, tc.code, r.Findings[0].Code)
			}
			if tc.policies != nil {
				assert.Equal(t, tc.policies, r.Evidence["policies"])
			}
			b, _ := json.Marshal(r)
			assert.NotContains(t, string(b), "PRIVATE KEY", "the call's arguments never appear in the answer")
			assert.NotContains(t, string(b), "hello")
		})
	}
}

func TestGatePrincipal(t *testing.T) {
	cfg, _ := json.Marshal(gate.Config{Policies: []gatePolicy{{Text: `
@id("admins") permit(principal, action, resource) when { principal.claims has groups && principal.claims.groups.contains("admin") };`}},
		Claims: map[string]string{"groups": "Set<String>"}})
	h := gatetest.NewHost(writeFile)
	admin := &abi.Principal{Method: abi.MethodOIDC, Issuer: "https://id", Subject: "ann", Claims: map[string]any{"groups": []any{"admin"}}}
	r := evaluate(t, h, string(cfg), "write_file", `{"path":"/x","content":"y"}`, admin)
	assert.Equal(t, abi.Accepted, r.Verdict)
	assert.Equal(t, `Caller::"ann"`, r.Evidence["principal"])
	assert.Equal(t, `Action::"mcp.fs:write_file"`, r.Evidence["action"])
	assert.Equal(t, `Server::"mcp.fs"`, r.Evidence["resource"])
	r = evaluate(t, h, string(cfg), "write_file", `{"path":"/x","content":"y"}`, nil)
	assert.Equal(t, abi.Rejected, r.Verdict)
}

func TestGateFailsClosed(t *testing.T) {
	cfg := exampleConfig(t)
	t.Run("catalog not granted", func(t *testing.T) {
		h := gatetest.NewHost(writeFile)
		h.Granted = nil
		r := evaluate(t, h, cfg, "write_file", `{"path":"/srv/share/public/a","content":"x"}`, nil)
		assert.Equal(t, abi.Inconclusive, r.Verdict)
		assert.Equal(t, abi.ReasonCapabilityDenied, r.Reason)
	})
	t.Run("a policy that does not parse", func(t *testing.T) {
		r := evaluate(t, gatetest.NewHost(writeFile), `{"policies":[{"text":"permit(principal"}]}`, "write_file", `{"path":"/a","content":"x"}`, nil)
		assert.Equal(t, abi.Inconclusive, r.Verdict)
		assert.Equal(t, abi.ReasonBadConfig, r.Reason)
	})
	t.Run("no policies deny", func(t *testing.T) {
		r := evaluate(t, gatetest.NewHost(writeFile), ``, "write_file", `{"path":"/a","content":"x"}`, nil)
		assert.Equal(t, abi.Rejected, r.Verdict)
		assert.Equal(t, "policy_no_permit", r.Findings[0].Code)
	})
	t.Run("an evaluation error", func(t *testing.T) {
		r := evaluate(t, gatetest.NewHost(writeFile), `{"policies":[{"text":"permit(principal, action, resource) when { context.arguments.nope == 1 };"}]}`,
			"write_file", `{"path":"/a","content":"x"}`, nil)
		assert.Equal(t, abi.Inconclusive, r.Verdict)
		assert.Equal(t, "policy_error", r.Reason)
	})
	t.Run("a proposal is not handled", func(t *testing.T) {
		req := abi.Request{SubjectKind: abi.SubjectProposal, Subject: json.RawMessage(`{"actions":[]}`), Context: abi.Context{Now: "2026-01-01T00:00:00Z"}}
		r, err := gatetest.Evaluate(context.Background(), gate.Gate, req, gatetest.NewHost())
		require.NoError(t, err)
		assert.Equal(t, abi.Inconclusive, r.Verdict)
		assert.Equal(t, abi.ReasonUnsupportedSubject, r.Reason)
	})
}
