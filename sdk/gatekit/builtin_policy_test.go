package gatekit_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/sdk/gatekit"
)

// TestBuiltinPolicy: the policy gate conforms with the example
// server-filesystem rules, and its module decides as the rules say.
func TestBuiltinPolicy(t *testing.T) {
	t.Parallel()
	dir := root(t)
	text, err := os.ReadFile(filepath.Join(dir, "examples/policies/filesystem.cedar"))
	require.NoError(t, err)
	cfg, err := json.Marshal(map[string]any{"policies": []map[string]string{{"file": "filesystem.cedar", "text": string(text)}}})
	require.NoError(t, err)
	tools, err := catalog.Load(filepath.Join(dir, "examples/policies/server-filesystem.tools.json"), catalog.ImportOptions{Format: catalog.FormatMCP, Server: "fs"})
	require.NoError(t, err)
	store, err := catalog.NewStore(tools...)
	require.NoError(t, err)
	call := func(tool, params string) json.RawMessage {
		return json.RawMessage(`{"tool":"` + tool + `","parameters":` + params + `}`)
	}
	gatekit.Run(t, build(t, "plugins/policy/wasm"), gatekit.Options{
		Budget: testBudget, OversizedBytes: oversized, Config: cfg,
		Subjects: map[abi.SubjectKind]json.RawMessage{
			abi.SubjectToolCall: call("write_file", `{"path":"/srv/share/public/a.md","content":"x"}`),
		},
		Cases: []gatekit.Case{
			{Name: "write-under-public", Subject: call("write_file", `{"path":"/srv/share/public/a.md","content":"x"}`), WantVerdict: abi.Accepted},
			{Name: "dot-dot-out", Subject: call("write_file", `{"path":"/srv/share/public/../a.md","content":"x"}`), WantVerdict: abi.Rejected, WantCodes: []string{"policy_no_permit"}},
			{Name: "private-key", Subject: call("write_file", `{"path":"/srv/share/public/k","content":"-----BEGIN PRIVATE KEY-----"}`), WantVerdict: abi.Rejected, WantCodes: []string{"policy_forbid"}},
			{Name: "unrepresentable", Subject: call("read_text_file", `{"path":"/srv/share/a","head":1e40}`), WantVerdict: abi.Inconclusive, WantReason: "argument_unrepresentable"},
			{Name: "no-catalog", Subject: call("write_file", `{"path":"/srv/share/public/a.md","content":"x"}`), Granted: &[]string{}, WantVerdict: abi.Inconclusive, WantReason: abi.ReasonCapabilityDenied},
		},
		Host: host.Config{Catalog: store, CacheDir: testwasm.CacheDir()},
	})
}
