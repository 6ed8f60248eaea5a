// Package edgecase holds the inputs at the edge of agent input — calls
// whose arguments did not decode, strings two JSON readers would read
// apart — and a config to send them through, shared by the CLI's and the
// HTTP server's tests, which must treat them alike.
package edgecase

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// WriteConfig writes a config whose pipelines would accept anything the
// host lets through: exec alone on tool calls, and a gate that accepts
// every subject unread (testdata/edge/accept-all.wat), on tool calls and
// on proposals. Session "s" has list_issues granted.
func WriteConfig(t *testing.T) (cfgPath, dir string) {
	t.Helper()
	root, err := testwasm.Root()
	require.NoError(t, err)
	execWasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	acceptAll, err := testwasm.WAT("testdata/edge/accept-all.wat")
	require.NoError(t, err)
	dir = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "accept-all.wasm"), acceptAll, 0o644))
	cfg := fmt.Sprintf(`
catalog:
  sources:
    - {format: mcp, path: %s, server: github}
event_log: {path: events.jsonl}
sessions: {path: var/sessions.json}
cache_dir: %s
plugins:
  exec: {path: %s}
  accept-all: {path: accept-all.wasm}
pipelines:
  exec:
    subject: tool_call
    stages:
      - {plugin: exec, timeout: 60s, capabilities: [catalog, session], config: {confirm_effects: [non_idempotent]}}
  call-accept-all:
    subject: tool_call
    stages:
      - {plugin: accept-all, timeout: 60s}
  plan-accept-all:
    subject: proposal
    stages:
      - {plugin: accept-all, timeout: 60s}
`, filepath.Join(root, "testdata/catalogs/github-mcp-server"), testwasm.CacheDir(), execWasm)
	cfgPath = filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	Activate(t, cfgPath, "s", "list_issues")
	return cfgPath, dir
}

// Activate grants tools to session id in the config's session file, as
// `gatehost session activate` does.
func Activate(t testing.TB, cfgPath, id string, tools ...string) {
	t.Helper()
	l, err := config.Load(cfgPath)
	require.NoError(t, err)
	defer l.Close()
	require.NotEmpty(t, l.SessionPath, "the config needs sessions.path")
	_, err = session.ActivateMany(context.Background(), l.Host.Sessions, l.Host.Catalog.Snapshot(), id, tools)
	require.NoError(t, err)
}

// Undecodable are calls whose arguments did not decode, in each format;
// each alone is a tool call and a one-action proposal.
var Undecodable = map[string]string{
	"openai":    `{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"list_issues","arguments":"[]"}}]}`,
	"anthropic": `{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"list_issues","input":"{}"}]}`,
	"mcp":       `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_issues","arguments":[]}}`,
	"native":    `{"tool":"list_issues","parse_error":"x"}`,
}

// NonIJSON are subjects with a string two readers would read apart, in
// each format, the pipeline of WriteConfig to send each to, and the JSON
// Pointer the refusal names.
var NonIJSON = []struct{ Name, Pipeline, Body, Field string }{
	{"openai arguments", "plan-accept-all", `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"list_issues","arguments":"{\"owner\":\"\\ud800\"}"}}]}`, "/tool_calls/0/function/arguments"},
	{"anthropic input", "call-accept-all", `{"type":"tool_use","id":"t","name":"list_issues","input":{"owner":"\udc00"}}`, "/input/owner"},
	{"mcp member name", "plan-accept-all", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_issues","arguments":{"\ud800\u0041":1}}}`, "/params/arguments"},
	{"native", "call-accept-all", `{"tool":"list_issues","parameters":{"owner":["\udbff"]}}`, "/parameters/owner/0"},
}

// GateNumbers are the numbers testdata/edge/accept-all.wat writes in its
// evidence and finding details, which every output must carry digit for
// digit.
var GateNumbers = []string{"12345678901234567890", "-9007199254740993", "0.30000000000000000000001", "1E+2", "123456789012345678901234567890", "18446744073709551615", "1.10"}
